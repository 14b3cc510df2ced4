package txn

import (
	"encoding/json"
	"fmt"
	"slices"
)

// State is a transaction's state.
type State int8

// The states (see the package comment).
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Offset is a consumer offset sent to a transaction (TxnOffsetCommit).
type Offset struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch,omitempty"`
	Metadata    string `json:"metadata,omitempty"`
}

// Record is one transactional id's state, as the Store keeps it.
type Record struct {
	// Version is the encoding's: 0 for a record without Ended (the
	// fields every logd reads), 1 with it. DecodeRecord refuses a
	// version above recordVersion, written by a newer logd.
	Version    int8   `json:"v,omitempty"`
	ID         string `json:"id"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int16  `json:"epoch"`
	State      State  `json:"state"`
	TimeoutMs  int32  `json:"timeout_ms"`
	// Txn numbers the producer id's transactions: raised as each one
	// begins (1 for the first), and carried by its markers, so that a
	// partition applies one marker per transaction however often it is
	// written (a copy of a failed write can land late).
	Txn int32 `json:"txn,omitempty"`
	// StartMs is when the transaction became Ongoing; UpdatedMs when the
	// record last changed.
	StartMs    int64            `json:"start_ms,omitempty"`
	UpdatedMs  int64            `json:"updated_ms,omitempty"`
	Partitions []TopicPartition `json:"partitions,omitempty"`
	Groups     []string         `json:"groups,omitempty"`
	// Offsets are the offsets sent to the transaction, by group: the
	// group's committed offsets once it commits.
	Offsets map[string][]Offset `json:"offsets,omitempty"`
	// Ended is set by the last end that bumped the epoch (EndBump, or an
	// abort at the timeout), until the next transaction begins: a retry
	// of that end is recognized by it and answered again.
	Ended *Ended `json:"ended,omitempty"`
}

// Ended is an end that bumped the epoch (KIP-890 part 2).
type Ended struct {
	// ProducerID and Epoch are the ones the end was asked at (the
	// transaction's), Commit its outcome.
	ProducerID int64 `json:"producer_id"`
	Epoch      int16 `json:"epoch"`
	Commit     bool  `json:"commit,omitempty"`
	// NextProducerID, when the producer id ran out of epochs or of
	// transaction numbers, is the producer id the end moves the record
	// to (at epoch 0) once its markers are written; chosen with the
	// decision, so whoever finishes it moves to the same one.
	NextProducerID *int64 `json:"next_producer_id,omitempty"`
}

// recordVersion is the highest encoding version DecodeRecord reads.
const recordVersion = 1

// Clone is a deep copy of r.
func (r Record) Clone() Record {
	r.Partitions = slices.Clone(r.Partitions)
	r.Groups = slices.Clone(r.Groups)
	if r.Ended != nil {
		en := *r.Ended
		if en.NextProducerID != nil {
			np := *en.NextProducerID
			en.NextProducerID = &np
		}
		r.Ended = &en
	}
	if r.Offsets != nil {
		m := make(map[string][]Offset, len(r.Offsets))
		for g, os := range r.Offsets {
			m[g] = slices.Clone(os)
		}
		r.Offsets = m
	}
	return r
}

// Encode is r's stored form (JSON), at the lowest version that holds it:
// a record without Ended encodes as every logd reads it.
func (r Record) Encode() []byte {
	r.Version = 0
	if r.Ended != nil {
		r.Version = 1
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("txn: encode record: %v", err)) // plain data: cannot fail
	}
	return b
}

// DecodeRecord reads a record Encode wrote.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("txn: decode record: %w", err)
	}
	if r.Version < 0 || r.Version > recordVersion {
		return Record{}, fmt.Errorf("txn: decode record: version %d, this logd reads up to %d: upgrade it", r.Version, recordVersion)
	}
	if r.ID == "" || r.State < Empty || r.State > CompleteAbort {
		return Record{}, fmt.Errorf("txn: decode record: id %q, state %d", r.ID, r.State)
	}
	return r, nil
}

// HasPartition reports whether the transaction holds tp.
func (r Record) HasPartition(tp TopicPartition) bool { return slices.Contains(r.Partitions, tp) }

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
}

// Clone is a deep copy of r.
func (r Record) Clone() Record {
	r.Partitions = slices.Clone(r.Partitions)
	r.Groups = slices.Clone(r.Groups)
	if r.Offsets != nil {
		m := make(map[string][]Offset, len(r.Offsets))
		for g, os := range r.Offsets {
			m[g] = slices.Clone(os)
		}
		r.Offsets = m
	}
	return r
}

// Encode is r's stored form (JSON).
func (r Record) Encode() []byte {
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
	if r.ID == "" || r.State < Empty || r.State > CompleteAbort {
		return Record{}, fmt.Errorf("txn: decode record: id %q, state %d", r.ID, r.State)
	}
	return r, nil
}

// HasPartition reports whether the transaction holds tp.
func (r Record) HasPartition(tp TopicPartition) bool { return slices.Contains(r.Partitions, tp) }

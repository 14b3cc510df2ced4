package batch

import (
	"encoding/binary"
	"fmt"
)

// AttrTransactional marks a batch written in a transaction (Kafka's
// attributes bit 4); with AttrControl, a transaction marker.
const AttrTransactional = attrTransactional

const attrOffset = 21 // the attributes field, first of the CRC's bytes

// IsTransactional reports whether a batch is part of a transaction (its
// records, or its marker).
func (i Info) IsTransactional() bool { return i.Attributes&AttrTransactional != 0 }

// IsControl reports whether a batch is a control batch.
func (i Info) IsControl() bool { return i.Attributes&AttrControl != 0 }

// EncodeTransactional appends one uncompressed batch of recs written in a
// transaction to dst: Encode's batch of producer p with the
// transactional attribute (Kafka's transactional producers' batches).
func EncodeTransactional(dst []byte, p Producer, recs []Record) []byte {
	start := len(dst)
	dst = Encode(dst, 0, p, recs)
	b := dst[start:]
	binary.BigEndian.PutUint16(b[attrOffset:], binary.BigEndian.Uint16(b[attrOffset:])|AttrTransactional)
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return dst
}

// EncodeControl appends a transaction marker to dst: Kafka's control
// batch (attributes transactional | control, base sequence -1) of
// producer p.ID at p.Epoch holding one record whose key is version 0 and
// the marker type (0 ABORT, 1 COMMIT) and whose value is version 0 and
// the coordinator's epoch.
func EncodeControl(dst []byte, p Producer, commit bool, coordinatorEpoch int32, timestampMs int64) []byte {
	key := []byte{0, 0, 0, 0}
	if commit {
		key[3] = 1
	}
	value := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(coordinatorEpoch))
	start := len(dst)
	p.Sequence = -1
	dst = Encode(dst, 0, p, []Record{{Timestamp: timestampMs, Key: key, Value: value}})
	b := dst[start:]
	binary.BigEndian.PutUint16(b[attrOffset:], AttrTransactional|AttrControl)
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	return dst
}

// ControlCommit reads a control batch's marker: true for COMMIT, false
// for ABORT; an error for a batch that is not a well-formed marker.
func ControlCommit(b []byte) (bool, error) {
	m, err := ControlMarker(b)
	return m.Commit, err
}

// Marker is a transaction marker's record: its type and the value's
// coordinator epoch.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// ControlMarker reads a control batch's marker; an error for a batch that
// is not a well-formed marker. A value too short to hold the coordinator
// epoch reads as 0.
func ControlMarker(b []byte) (Marker, error) {
	info, recs, err := Decode(b, 0)
	if err != nil {
		return Marker{}, err
	}
	if !info.IsControl() || len(recs) != 1 || len(recs[0].Key) < 4 {
		return Marker{}, fmt.Errorf("%w: not a transaction marker", ErrCorrupt)
	}
	var m Marker
	switch t := binary.BigEndian.Uint16(recs[0].Key[2:]); t {
	case 0:
	case 1:
		m.Commit = true
	default:
		return Marker{}, fmt.Errorf("%w: control record type %d is not a transaction marker", ErrCorrupt, t)
	}
	if v := recs[0].Value; len(v) >= 6 {
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(v[2:]))
	}
	return m, nil
}

// CheckControl is Validate for a transaction marker the broker made
// (EncodeControl): its frame, and its one record a marker. Validate
// refuses control batches, which only a broker may write.
func CheckControl(b []byte) (Checked, error) {
	c, err := CheckFrame(b)
	if err != nil {
		return Checked{}, err
	}
	if !c.info.IsTransactional() || c.info.ProducerID < 0 {
		return Checked{}, fmt.Errorf("%w: a marker needs the transactional bit and a producer id", ErrCorrupt)
	}
	if _, err := ControlCommit(b); err != nil {
		return Checked{}, err
	}
	c.valid = true
	return c, nil
}

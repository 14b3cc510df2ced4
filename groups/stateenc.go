package groups

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// The encoding of a GroupState (EncodeGroupState): a version byte, then
// the fields in order; strings and byte slices are a uvarint length and
// the bytes, integers varints, a count precedes each list, and the
// partition counts are sorted by topic so one state has one encoding.
const stateVersion = 1

// EncodeGroupState encodes st for a StateStore that keeps bytes.
func EncodeGroupState(st GroupState) []byte {
	b := []byte{stateVersion}
	b = appendString(b, st.Group)
	b = binary.AppendVarint(b, int64(st.Generation))
	b = appendString(b, st.ProtocolType)
	b = appendString(b, st.Protocol)
	b = appendString(b, st.Leader)
	topics := make([]string, 0, len(st.Counts))
	for t := range st.Counts {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	b = binary.AppendUvarint(b, uint64(len(topics)))
	for _, t := range topics {
		b = appendString(b, t)
		b = binary.AppendVarint(b, int64(st.Counts[t]))
	}
	b = binary.AppendUvarint(b, uint64(len(st.Members)))
	for _, m := range st.Members {
		b = appendString(b, m.MemberID)
		b = appendString(b, m.ClientID)
		b = appendString(b, m.ClientHost)
		b = binary.AppendVarint(b, int64(m.SessionTimeout))
		b = binary.AppendVarint(b, int64(m.RebalanceTimeout))
		flag := byte(0)
		if m.ServerAssign {
			flag = 1
		}
		b = append(b, flag)
		b = binary.AppendUvarint(b, uint64(len(m.Protocols)))
		for _, p := range m.Protocols {
			b = appendString(b, p)
		}
		b = appendString(b, string(m.Metadata))
		b = appendString(b, string(m.Assignment))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeGroupState decodes EncodeGroupState's bytes. Bytes that do not
// decode (another version, cut short, trailing data) are an error naming
// what is wrong.
func DecodeGroupState(b []byte) (GroupState, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return GroupState{}, fmt.Errorf("groups: group state of %d bytes does not start with version %d", len(b), stateVersion)
	}
	d := &stateDecoder{b: b[1:]}
	var st GroupState
	st.Group = d.str()
	st.Generation = d.int32()
	st.ProtocolType, st.Protocol, st.Leader = d.str(), d.str(), d.str()
	if n := d.count(); n > 0 {
		st.Counts = make(map[string]int32, n)
		for range n {
			t := d.str()
			st.Counts[t] = d.int32()
		}
	}
	for range d.count() {
		var m MemberState
		m.MemberID, m.ClientID, m.ClientHost = d.str(), d.str(), d.str()
		m.SessionTimeout, m.RebalanceTimeout = time.Duration(d.varint()), time.Duration(d.varint())
		m.ServerAssign = d.flag() == 1
		for range d.count() {
			m.Protocols = append(m.Protocols, d.str())
		}
		m.Metadata, m.Assignment = d.bytes(), d.bytes()
		st.Members = append(st.Members, m)
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the end", len(d.b))
	}
	if d.err != nil {
		return GroupState{}, fmt.Errorf("groups: group state %q does not decode: %w", st.Group, d.err)
	}
	return st, nil
}

// stateDecoder reads a GroupState's fields; the first error sticks and
// every later read returns zero.
type stateDecoder struct {
	b   []byte
	err error
}

var errShort = errors.New("cut short")

func (d *stateDecoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }
func (d *stateDecoder) varint() int64   { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](d *stateDecoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *stateDecoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("%d is not an int32", v))
		return 0
	}
	return int32(v)
}

// count is a list's length: each element takes at least one byte, so a
// count above the bytes left is corrupt (and allocates nothing).
func (d *stateDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("a list of %d with %d bytes left", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *stateDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("a field of %d bytes with %d left", n, len(d.b)))
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, d.b)
	d.b = d.b[n:]
	return out
}

func (d *stateDecoder) str() string { return string(d.bytes()) }

func (d *stateDecoder) flag() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *stateDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/logd/logd/internal/batch"
)

// Entry framing: the prefix every entry shares with a Kafka v2 batch, and
// logd's own entries (doc.go draws the layouts).
const (
	prefixSize    = 17
	lengthAt      = 8
	epochAt       = 12
	magicAt       = 16
	ownMagic      = 100
	ownCRCAt      = 17
	ownTypeAt     = 21
	ownHeaderSize = 22

	typeSegmentHeader = 1
	typeRaft          = 2
	typeCompacted     = 3 // compact.go

	segmentHeaderSize = ownHeaderSize + 24
	raftHeaderSize    = ownHeaderSize + 9
	compactedSize     = ownHeaderSize + 8

	// maxEntrySize bounds the size an entry may claim, so a garbage length
	// cannot make a reader allocate gigabytes.
	maxEntrySize = 256 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errShort means the bytes end before the entry does: a torn tail, or a
// read that must fetch more.
var errShort = errors.New("log: short entry")

// entryType is what an entry holds.
type entryType uint8

const (
	entryBatch entryType = iota
	entrySegmentHeader
	entryRaft
	entryCompacted // a batch the cleaner removed: owns its offsets, holds no record
)

// entryInfo is a decoded entry.
type entryInfo struct {
	typ        entryType
	size       int
	baseOffset int64
	nextOffset int64 // after the batch's last record; baseOffset for logd entries
	epoch      int32
	maxTS      int64 // batches: max timestamp
	rewritten  bool  // batches: the cleaner removed records from it
	// Raft entries.
	kind EntryKind
	term uint64
	data []byte // aliases the decoded bytes
	// Segment headers.
	header segmentHeader
}

// segmentHeader is the payload of a segment's first entry.
type segmentHeader struct {
	baseOffset int64
	firstIndex uint64
	created    time.Time
}

// entrySize returns the size of the entry starting at b, from its prefix.
func entrySize(b []byte) (int, error) {
	if len(b) < prefixSize {
		return 0, errShort
	}
	var n int
	switch int8(b[magicAt]) {
	case batch.Magic:
		s, err := batch.Size(b)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		n = s
	case ownMagic:
		l := int32(binary.BigEndian.Uint32(b[lengthAt:]))
		if l < ownHeaderSize-12 {
			return 0, fmt.Errorf("%w: logd entry length %d too small", ErrCorrupt, l)
		}
		n = 12 + int(l)
	default:
		return 0, fmt.Errorf("%w: unknown magic %d", ErrCorrupt, int8(b[magicAt]))
	}
	if n > maxEntrySize {
		return 0, fmt.Errorf("%w: entry size %d exceeds %d", ErrCorrupt, n, maxEntrySize)
	}
	return n, nil
}

// decodeEntry verifies and decodes the whole entry at the start of b (b may
// hold more). It returns errShort when b ends before the entry, an error
// wrapping ErrCorrupt when the entry is malformed or its CRC is wrong, and
// never panics.
func decodeEntry(b []byte) (entryInfo, error) {
	n, err := entrySize(b)
	if err != nil {
		return entryInfo{}, err
	}
	if len(b) < n {
		return entryInfo{}, errShort
	}
	b = b[:n]
	e := entryInfo{
		size:       n,
		baseOffset: int64(binary.BigEndian.Uint64(b)),
		epoch:      int32(binary.BigEndian.Uint32(b[epochAt:])),
	}
	if b[magicAt] == batch.Magic {
		info, err := batch.Verify(b)
		if err != nil {
			// Whole by its length field, so even batch.ErrShort (a length
			// below the fixed header) means corrupt here.
			return entryInfo{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if info.LastOffsetDelta < 0 {
			return entryInfo{}, fmt.Errorf("%w: batch owns no offset", ErrCorrupt)
		}
		e.typ = entryBatch
		// Fewer records than offsets (or none): the cleaner rewrote it.
		e.rewritten = info.NumRecords <= info.LastOffsetDelta
		e.nextOffset = info.NextOffset()
		e.maxTS = info.MaxTimestamp
		return e, nil
	}
	if got, want := crc32.Checksum(b[ownTypeAt:], crcTable), binary.BigEndian.Uint32(b[ownCRCAt:]); got != want {
		return entryInfo{}, fmt.Errorf("%w: logd entry crc32c %08x, stored %08x", ErrCorrupt, got, want)
	}
	e.nextOffset = e.baseOffset
	switch b[ownTypeAt] {
	case typeSegmentHeader:
		if n != segmentHeaderSize {
			return entryInfo{}, fmt.Errorf("%w: segment header of %d bytes", ErrCorrupt, n)
		}
		p := b[ownHeaderSize:]
		e.typ = entrySegmentHeader
		e.header = segmentHeader{
			baseOffset: int64(binary.BigEndian.Uint64(p)),
			firstIndex: binary.BigEndian.Uint64(p[8:]),
			created:    time.Unix(0, int64(binary.BigEndian.Uint64(p[16:]))),
		}
	case typeRaft:
		if n < raftHeaderSize {
			return entryInfo{}, fmt.Errorf("%w: raft entry of %d bytes", ErrCorrupt, n)
		}
		p := b[ownHeaderSize:]
		e.typ = entryRaft
		e.kind = EntryKind(p[0])
		e.term = binary.BigEndian.Uint64(p[1:])
		e.data = p[9:]
		if e.kind == KindBatch {
			return entryInfo{}, fmt.Errorf("%w: raft entry of kind batch", ErrCorrupt)
		}
	case typeCompacted:
		if n != compactedSize {
			return entryInfo{}, fmt.Errorf("%w: compacted entry of %d bytes", ErrCorrupt, n)
		}
		e.typ = entryCompacted
		e.nextOffset = int64(binary.BigEndian.Uint64(b[ownHeaderSize:]))
		if e.nextOffset <= e.baseOffset {
			return entryInfo{}, fmt.Errorf("%w: compacted entry owns offsets %d to %d", ErrCorrupt, e.baseOffset, e.nextOffset)
		}
	default:
		return entryInfo{}, fmt.Errorf("%w: logd entry type %d", ErrCorrupt, b[ownTypeAt])
	}
	return e, nil
}

// appendOwnEntry appends a logd entry with the given type and payload parts.
func appendOwnEntry(dst []byte, baseOffset int64, epoch int32, typ byte, payload ...[]byte) []byte {
	start := len(dst)
	n := ownHeaderSize
	for _, p := range payload {
		n += len(p)
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(baseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(n-12))
	dst = binary.BigEndian.AppendUint32(dst, uint32(epoch))
	dst = append(dst, ownMagic, 0, 0, 0, 0, typ)
	for _, p := range payload {
		dst = append(dst, p...)
	}
	binary.BigEndian.PutUint32(dst[start+ownCRCAt:], crc32.Checksum(dst[start+ownTypeAt:], crcTable))
	return dst
}

func appendSegmentHeader(dst []byte, h segmentHeader) []byte {
	var p [24]byte
	binary.BigEndian.PutUint64(p[:], uint64(h.baseOffset))
	binary.BigEndian.PutUint64(p[8:], h.firstIndex)
	binary.BigEndian.PutUint64(p[16:], uint64(h.created.UnixNano()))
	return appendOwnEntry(dst, h.baseOffset, 0, typeSegmentHeader, p[:])
}

func appendRaftEntry(dst []byte, baseOffset int64, kind EntryKind, term uint64, data []byte) []byte {
	var p [9]byte
	p[0] = byte(kind)
	binary.BigEndian.PutUint64(p[1:], term)
	return appendOwnEntry(dst, baseOffset, int32(uint32(term)), typeRaft, p[:], data)
}

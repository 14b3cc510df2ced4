package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sizes and constants of the v2 format.
const (
	HeaderSize   = 61 // fixed header before the records
	Magic        = 2
	lengthOffset = 8
	epochOffset  = 12
	magicOffset  = 16
	crcOffset    = 17
	crcStart     = 21
	// minLength is the smallest valid value of the batch length field: the
	// header after the length field, with no records.
	minLength = HeaderSize - 12

	// AttrCompressionMask selects the compression codec bits.
	AttrCompressionMask = 0x07
	// AttrControl marks a control batch (Kafka transaction markers).
	AttrControl = 0x20
)

var (
	// ErrCorrupt is returned for bytes that are not a well-formed batch.
	ErrCorrupt = errors.New("batch: corrupt")
	// ErrShort is returned when the buffer ends before the batch does; more
	// bytes may make it whole (a torn tail, or a read that stopped early).
	ErrShort = errors.New("batch: short buffer")
	// ErrUnsupported is returned for well-formed batches logd does not store
	// (an unknown compression codec, transactions, control batches).
	ErrUnsupported = errors.New("batch: unsupported")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Info is a batch's decoded fixed header.
type Info struct {
	BaseOffset      int64
	Length          int32 // the batch length field: Size() - 12
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	FirstSequence   int32
	NumRecords      int32
}

// Size is the whole batch's size in bytes.
func (i Info) Size() int { return 12 + int(i.Length) }

// LastOffset is the offset of the batch's last record.
func (i Info) LastOffset() int64 { return i.BaseOffset + int64(i.LastOffsetDelta) }

// NextOffset is the offset just after the batch.
func (i Info) NextOffset() int64 { return i.BaseOffset + int64(i.LastOffsetDelta) + 1 }

// Compressed reports whether the records are compressed.
func (i Info) Compressed() bool { return i.Attributes&AttrCompressionMask != 0 }

// Size returns the size of the batch that starts at b[0], reading only the
// first 12 bytes. It fails with ErrShort when fewer than 12 bytes are given
// and ErrCorrupt when the length field is impossible.
func Size(b []byte) (int, error) {
	if len(b) < 12 {
		return 0, ErrShort
	}
	n := int32(binary.BigEndian.Uint32(b[lengthOffset:]))
	if n < minLength {
		return 0, fmt.Errorf("%w: batch length %d is below the %d-byte minimum", ErrCorrupt, n, minLength)
	}
	return 12 + int(n), nil
}

// ParseHeader decodes the fixed header at the start of b without checking
// the CRC. b must hold at least HeaderSize bytes.
func ParseHeader(b []byte) (Info, error) {
	if len(b) < HeaderSize {
		return Info{}, ErrShort
	}
	if _, err := Size(b); err != nil {
		return Info{}, err
	}
	var rb kmsg.RecordBatch
	// The length field tells kmsg how many record bytes follow; give it a
	// header-only view with a patched length so it reads no further.
	var hdr [HeaderSize]byte
	copy(hdr[:], b[:HeaderSize])
	binary.BigEndian.PutUint32(hdr[lengthOffset:], minLength)
	if err := rb.UnsafeReadFrom(hdr[:]); err != nil {
		return Info{}, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	info := Info{
		BaseOffset:      rb.FirstOffset,
		Length:          int32(binary.BigEndian.Uint32(b[lengthOffset:])),
		LeaderEpoch:     rb.PartitionLeaderEpoch,
		Magic:           rb.Magic,
		CRC:             uint32(rb.CRC),
		Attributes:      rb.Attributes,
		LastOffsetDelta: rb.LastOffsetDelta,
		FirstTimestamp:  rb.FirstTimestamp,
		MaxTimestamp:    rb.MaxTimestamp,
		ProducerID:      rb.ProducerID,
		ProducerEpoch:   rb.ProducerEpoch,
		FirstSequence:   rb.FirstSequence,
		NumRecords:      rb.NumRecords,
	}
	if info.Magic != Magic {
		return info, fmt.Errorf("%w: magic %d, want %d", ErrCorrupt, info.Magic, Magic)
	}
	if info.NumRecords < 0 || info.LastOffsetDelta < -1 {
		return info, fmt.Errorf("%w: record count %d, last offset delta %d", ErrCorrupt, info.NumRecords, info.LastOffsetDelta)
	}
	if int64(info.NumRecords) > int64(info.LastOffsetDelta)+1 {
		// Fewer records than offsets is a compacted batch (Rewrite); more
		// cannot be.
		return info, fmt.Errorf("%w: %d records but last offset delta %d", ErrCorrupt, info.NumRecords, info.LastOffsetDelta)
	}
	return info, nil
}

// Verify checks the batch at the start of b: header, length, and CRC-32C.
// b may hold more bytes after the batch; only Info.Size() of them are
// checked.
func Verify(b []byte) (Info, error) {
	info, err := ParseHeader(b)
	if err != nil {
		return info, err
	}
	if len(b) < info.Size() {
		return info, ErrShort
	}
	if got := Checksum(b[:info.Size()]); got != info.CRC {
		return info, fmt.Errorf("%w: crc32c %08x, header says %08x", ErrCorrupt, got, info.CRC)
	}
	return info, nil
}

// Checksum computes the CRC-32C of a whole batch as stored in its header.
func Checksum(b []byte) uint32 {
	if h := checksumHook.Load(); h != nil {
		(*h)(b)
	}
	return crc32.Checksum(b[crcStart:], castagnoli)
}

// SetBaseOffset rewrites the base offset of the batch at b[0] in place. The
// CRC does not cover it.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b, uint64(off)) }

// SetLeaderEpoch rewrites the partition leader epoch in place (outside the CRC).
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[epochOffset:], uint32(epoch))
}

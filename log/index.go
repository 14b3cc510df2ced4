package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"time"
)

// Sparse indexes (doc.go draws the layouts). An index is a cache of its
// segment: every lookup result is a place to start scanning from, never an
// answer by itself.

const (
	offsetEntrySize = 12
	timeEntrySize   = 16
	footerSize      = 76
	indexVersion    = 1

	offsetIndexMagic = "LDOX"
	timeIndexMagic   = "LDTX"
)

// indexEntry points at the entry at pos, the ordinal-th of its segment.
// In memory it also carries the running max timestamp before pos, so a
// truncation can resume the index build there (not stored in files).
type indexEntry struct {
	ordinal uint32
	relOff  uint32
	pos     uint32
	maxTS   int64
}

// timeEntry: every batch before pos has timestamps <= maxTS.
type timeEntry struct {
	maxTS  int64
	relOff uint32
	pos    uint32
}

// footer is the tail of both index files; it describes the segment so that
// Open needs no scan of a closed segment.
type footer struct {
	magic      string
	count      uint32 // index entries before the footer
	segSize    int64
	baseOffset int64
	nextOffset int64
	firstIndex uint64
	entries    uint64
	maxTS      int64
	created    time.Time
}

// append appends the footer: its fields, the CRC of the index entries, and
// its own CRC.
func (f footer) append(dst []byte, entriesCRC uint32) []byte {
	start := len(dst)
	dst = append(dst, f.magic...)
	dst = binary.BigEndian.AppendUint32(dst, indexVersion)
	dst = binary.BigEndian.AppendUint32(dst, f.count)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.segSize))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.baseOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.nextOffset))
	dst = binary.BigEndian.AppendUint64(dst, f.firstIndex)
	dst = binary.BigEndian.AppendUint64(dst, f.entries)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.maxTS))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.created.UnixNano()))
	dst = binary.BigEndian.AppendUint32(dst, entriesCRC)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// parseFooter checks a footer's own CRC and fields and decodes it. It also
// returns the CRC of the index entries, which verifyIndexFile checks once,
// the first time the segment is read: Open reads only footers.
func parseFooter(b []byte, magic string) (footer, uint32, error) {
	if len(b) != footerSize {
		return footer{}, 0, fmt.Errorf("%w: index footer of %d bytes", ErrCorrupt, len(b))
	}
	if got, want := crc32.Checksum(b[:footerSize-4], crcTable), binary.BigEndian.Uint32(b[footerSize-4:]); got != want {
		return footer{}, 0, fmt.Errorf("%w: index footer crc32c %08x, stored %08x", ErrCorrupt, got, want)
	}
	if string(b[:4]) != magic {
		return footer{}, 0, fmt.Errorf("%w: index footer magic %q, want %q", ErrCorrupt, b[:4], magic)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != indexVersion {
		return footer{}, 0, fmt.Errorf("%w: index version %d, want %d", ErrCorrupt, v, indexVersion)
	}
	f := footer{
		magic:      magic,
		count:      binary.BigEndian.Uint32(b[8:]),
		segSize:    int64(binary.BigEndian.Uint64(b[12:])),
		baseOffset: int64(binary.BigEndian.Uint64(b[20:])),
		nextOffset: int64(binary.BigEndian.Uint64(b[28:])),
		firstIndex: binary.BigEndian.Uint64(b[36:]),
		entries:    binary.BigEndian.Uint64(b[44:]),
		maxTS:      int64(binary.BigEndian.Uint64(b[52:])),
		created:    time.Unix(0, int64(binary.BigEndian.Uint64(b[60:]))),
	}
	if f.nextOffset < f.baseOffset || f.segSize < segmentHeaderSize {
		return footer{}, 0, fmt.Errorf("%w: index footer describes offsets [%d, %d) in %d bytes", ErrCorrupt, f.baseOffset, f.nextOffset, f.segSize)
	}
	return f, binary.BigEndian.Uint32(b[68:]), nil
}

// memIndex is the active segment's index, in memory. It is also the index
// of a closed segment whose index files could not be written.
type memIndex struct {
	offsets []indexEntry
	times   []timeEntry
}

// byOffset returns the last entry whose relative offset is <= rel.
func (m *memIndex) byOffset(rel uint32) (indexEntry, bool) {
	i := sort.Search(len(m.offsets), func(i int) bool { return m.offsets[i].relOff > rel })
	if i == 0 {
		return indexEntry{}, false
	}
	return m.offsets[i-1], true
}

// byOrdinal returns the last entry whose ordinal is <= ord.
func (m *memIndex) byOrdinal(ord uint32) (indexEntry, bool) {
	i := sort.Search(len(m.offsets), func(i int) bool { return m.offsets[i].ordinal > ord })
	if i == 0 {
		return indexEntry{}, false
	}
	return m.offsets[i-1], true
}

// byTime returns the last entry whose maxTS is below ts.
func (m *memIndex) byTime(ts int64) (timeEntry, bool) {
	i := sort.Search(len(m.times), func(i int) bool { return m.times[i].maxTS >= ts })
	if i == 0 {
		return timeEntry{}, false
	}
	return m.times[i-1], true
}

// indexBuilder adds entries to a memIndex as a segment is written or
// scanned.
type indexBuilder struct {
	idx          memIndex
	interval     int64
	lastOffPos   int64
	lastTimePos  int64
	maxTS        int64 // running max timestamp of the batches so far; -1 none
	lastIndexedT int64
}

func newIndexBuilder(interval int) *indexBuilder {
	return &indexBuilder{
		interval:     int64(interval),
		lastOffPos:   segmentHeaderSize,
		lastTimePos:  segmentHeaderSize,
		maxTS:        -1,
		lastIndexedT: -1,
	}
}

// add records the entry at pos, the ordinal-th of the segment, before it is
// applied (e describes it).
func (ib *indexBuilder) add(base int64, ordinal uint64, pos int64, e *entryInfo) {
	if pos-ib.lastOffPos >= ib.interval {
		ib.idx.offsets = append(ib.idx.offsets, indexEntry{ordinal: uint32(ordinal), relOff: uint32(e.baseOffset - base), pos: uint32(pos), maxTS: ib.maxTS})
		ib.lastOffPos = pos
	}
	if ib.maxTS > ib.lastIndexedT && pos-ib.lastTimePos >= ib.interval {
		ib.idx.times = append(ib.idx.times, timeEntry{maxTS: ib.maxTS, relOff: uint32(e.baseOffset - base), pos: uint32(pos)})
		ib.lastTimePos = pos
		ib.lastIndexedT = ib.maxTS
	}
	if e.typ == entryBatch && e.maxTS > ib.maxTS {
		ib.maxTS = e.maxTS
	}
}

// rewind returns a builder in the state it was in just before the entry at
// cp, one of its offset entries (or the zero entry: the segment's start).
func (ib *indexBuilder) rewind(cp indexEntry) *indexBuilder {
	n := newIndexBuilder(int(ib.interval))
	if cp.pos == 0 {
		return n
	}
	i := sort.Search(len(ib.idx.offsets), func(i int) bool { return ib.idx.offsets[i].pos >= cp.pos })
	n.idx.offsets = append([]indexEntry(nil), ib.idx.offsets[:i]...)
	if i > 0 {
		n.lastOffPos = int64(n.idx.offsets[i-1].pos)
	}
	j := sort.Search(len(ib.idx.times), func(j int) bool { return ib.idx.times[j].pos >= cp.pos })
	n.idx.times = append([]timeEntry(nil), ib.idx.times[:j]...)
	if j > 0 {
		n.lastTimePos = int64(n.idx.times[j-1].pos)
		n.lastIndexedT = n.idx.times[j-1].maxTS
	}
	n.maxTS = cp.maxTS
	return n
}

// fileIndex is a closed segment's index file, searched with ReadAt.
type fileIndex struct {
	f     File
	count int
	esize int
}

func (fi *fileIndex) read(i int, b []byte) error {
	_, err := fi.f.ReadAt(b, int64(i*fi.esize))
	return err
}

// search returns the largest i such that !above(entry i), or -1.
func (fi *fileIndex) search(above func(b []byte) bool) (int, []byte, error) {
	b := make([]byte, fi.esize)
	var err error
	i := sort.Search(fi.count, func(i int) bool {
		if err != nil {
			return true
		}
		if err = fi.read(i, b); err != nil {
			return true
		}
		return above(b)
	})
	if err != nil {
		return -1, nil, err
	}
	if i == 0 {
		return -1, nil, nil
	}
	if err := fi.read(i-1, b); err != nil {
		return -1, nil, err
	}
	return i - 1, b, nil
}

func decodeIndexEntry(b []byte) indexEntry {
	return indexEntry{ordinal: binary.BigEndian.Uint32(b), relOff: binary.BigEndian.Uint32(b[4:]), pos: binary.BigEndian.Uint32(b[8:])}
}

func decodeTimeEntry(b []byte) timeEntry {
	return timeEntry{maxTS: int64(binary.BigEndian.Uint64(b)), relOff: binary.BigEndian.Uint32(b[8:]), pos: binary.BigEndian.Uint32(b[12:])}
}

func (m *memIndex) encodeOffsets(dst []byte) []byte {
	for _, e := range m.offsets {
		dst = binary.BigEndian.AppendUint32(dst, e.ordinal)
		dst = binary.BigEndian.AppendUint32(dst, e.relOff)
		dst = binary.BigEndian.AppendUint32(dst, e.pos)
	}
	return dst
}

func (m *memIndex) encodeTimes(dst []byte) []byte {
	for _, e := range m.times {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.maxTS))
		dst = binary.BigEndian.AppendUint32(dst, e.relOff)
		dst = binary.BigEndian.AppendUint32(dst, e.pos)
	}
	return dst
}

// encodeIndexFile returns entries followed by the footer.
func encodeIndexFile(entries []byte, f footer) []byte {
	return f.append(entries, crc32.Checksum(entries, crcTable))
}

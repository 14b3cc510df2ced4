package log

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	tmpSuffix       = ".tmp"
)

// segment is one segment file and what the log knows about it. Fields are
// guarded by Log.mu unless noted.
type segment struct {
	dir        string
	base       int64
	next       int64  // offset after the last record
	firstIndex uint64 // Raft index of the first entry after the header
	entries    uint64 // entries after the header
	size       int64  // bytes written (for the active segment: the written end)
	maxTS      int64
	created    time.Time

	// The active segment's file (read-write) and in-memory index. A closed
	// segment whose index files could not be written keeps mem too.
	active bool
	ib     *indexBuilder
	mem    *memIndex

	// Closed segments: handle is the open read handle (nil when closed),
	// refs the readers and syncers holding it.
	h       *handle
	refs    int
	deleted bool
	lruTick uint64

	// idxMu guards the lazy check of a closed segment's index files, and
	// fallback, its index rebuilt in memory when they failed it.
	idxMu      sync.Mutex
	idxChecked bool // the index files' CRC is known good
	fallback   *memIndex
}

// handle is a segment's open file, and a closed segment's open index files.
type handle struct {
	f     File
	off   *fileIndex
	times *fileIndex
}

func (s *segment) path() string      { return segmentPath(s.dir, s.base, logSuffix) }
func (s *segment) lastIndex() uint64 { return s.firstIndex + s.entries - 1 }
func (s *segment) nextIndex() uint64 { return s.firstIndex + s.entries }
func (s *segment) hasOffsets() bool  { return s.next > s.base }
func (s *segment) containsIndex(i uint64) bool {
	return s.entries > 0 && i >= s.firstIndex && i <= s.lastIndex()
}

func (s *segment) info() SegmentInfo {
	return SegmentInfo{BaseOffset: s.base, NextOffset: s.next, FirstIndex: s.firstIndex, Size: s.size, MaxTimestamp: s.maxTS, Created: s.created, Active: s.active}
}

func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset and suffix of a segment or index
// file name.
func parseSegmentName(name string) (int64, string, bool) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if stem, ok := strings.CutSuffix(name, suf); ok && len(stem) == 20 {
			n, err := strconv.ParseInt(stem, 10, 64)
			if err != nil || n < 0 {
				return 0, "", false
			}
			return n, suf, true
		}
	}
	return 0, "", false
}

// scanResult is what a full scan of a segment found.
type scanResult struct {
	header  segmentHeader
	good    int64 // end of the last whole, valid entry
	size    int64 // file size
	next    int64
	entries uint64
	maxTS   int64
	ib      *indexBuilder
	err     error // why the scan stopped before size (torn or corrupt), or nil
}

// scanSegment reads a whole segment, verifying every entry, and builds its
// index. It stops at the first torn or corrupt entry, or one whose base
// offset breaks the sequence, and reports where in good and err.
func scanSegment(f File, base int64, interval int) (scanResult, error) {
	size, err := f.Size()
	if err != nil {
		return scanResult{}, err
	}
	r := scanResult{size: size, next: base, maxTS: -1, ib: newIndexBuilder(interval)}
	sc := newScanner(f, 0, size, 0)
	pos, _, e, err := sc.next()
	if err == nil && e.typ != entrySegmentHeader {
		err = fmt.Errorf("%w: first entry is not a segment header", ErrCorrupt)
	}
	if err == nil && e.header.baseOffset != base {
		err = fmt.Errorf("%w: segment header says base offset %d", ErrCorrupt, e.header.baseOffset)
	}
	if err != nil {
		if err == io.EOF {
			err = errShort
		}
		r.err = err
		return r, nil
	}
	r.header = e.header
	r.good = pos + int64(e.size)
	for {
		pos, _, e, err := sc.next()
		if err == io.EOF {
			return r, nil
		}
		if err == nil && e.baseOffset != r.next {
			err = fmt.Errorf("%w: entry base offset %d, want %d", ErrCorrupt, e.baseOffset, r.next)
		}
		if err == nil && e.typ == entrySegmentHeader {
			err = fmt.Errorf("%w: segment header inside the segment", ErrCorrupt)
		}
		if err != nil {
			if isIOError(err) {
				return r, err
			}
			r.err = err
			return r, nil
		}
		r.ib.add(base, r.entries, pos, &e)
		r.entries++
		r.next = e.nextOffset
		r.good = pos + int64(e.size)
		if e.typ == entryBatch && e.maxTS > r.maxTS {
			r.maxTS = e.maxTS
		}
	}
}

// isIOError tells a failed read from bad bytes.
func isIOError(err error) bool {
	return !errors.Is(err, ErrCorrupt) && !errors.Is(err, errShort)
}

// writeIndexFiles writes a closed segment's two index files: temp file,
// fsync, rename, directory fsync.
func (l *Log) writeIndexFiles(s *segment, m *memIndex) error {
	f := footer{
		segSize: s.size, baseOffset: s.base, nextOffset: s.next, firstIndex: s.firstIndex,
		entries: s.entries, maxTS: s.maxTS, created: s.created,
	}
	f.magic, f.count = offsetIndexMagic, uint32(len(m.offsets))
	if err := l.writeFileAtomic(segmentPath(s.dir, s.base, indexSuffix), encodeIndexFile(m.encodeOffsets(nil), f)); err != nil {
		return err
	}
	f.magic, f.count = timeIndexMagic, uint32(len(m.times))
	if err := l.writeFileAtomic(segmentPath(s.dir, s.base, timeIndexSuffix), encodeIndexFile(m.encodeTimes(nil), f)); err != nil {
		return err
	}
	return l.fs.SyncDir(s.dir)
}

func (l *Log) writeFileAtomic(name string, b []byte) error {
	tmp := name + tmpSuffix
	f, err := l.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		l.countWritten(len(b))
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.Rename(tmp, name)
	}
	if err != nil {
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("log: write %s: %w", name, err)
	}
	return nil
}

// readFooter reads and checks the footer of one index file against the
// segment size, and returns it with the file's size.
func readFooter(fs FS, name, magic string, base, segSize int64, esize int) (footer, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return footer{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return footer{}, err
	}
	if size < footerSize {
		return footer{}, fmt.Errorf("%w: %s: %d bytes, shorter than its footer", ErrCorrupt, name, size)
	}
	b := make([]byte, footerSize)
	if _, err := f.ReadAt(b, size-footerSize); err != nil {
		return footer{}, err
	}
	ft, _, err := parseFooter(b, magic)
	if err != nil {
		return footer{}, fmt.Errorf("%s: %w", name, err)
	}
	if ft.baseOffset != base || ft.segSize != segSize || int64(ft.count)*int64(esize)+footerSize != size {
		return footer{}, fmt.Errorf("%w: %s: footer (base %d, segment %d bytes, %d entries) does not match segment (base %d, %d bytes) or file (%d bytes)",
			ErrCorrupt, name, ft.baseOffset, ft.segSize, ft.count, base, segSize, size)
	}
	return ft, nil
}

// verifyIndexFile checks the CRC of a whole index file, reading it in
// chunks.
func verifyIndexFile(f File, count uint32, esize int) error {
	n := int64(count)*int64(esize) + footerSize
	buf := make([]byte, 64<<10)
	var crc uint32
	for pos := int64(0); pos < n-4; {
		c := min(int64(len(buf)), n-4-pos)
		if _, err := f.ReadAt(buf[:c], pos); err != nil {
			return err
		}
		crc = crc32.Update(crc, crcTable, buf[:c])
		pos += c
	}
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], n-4); err != nil {
		return err
	}
	if want := uint32(tail[0])<<24 | uint32(tail[1])<<16 | uint32(tail[2])<<8 | uint32(tail[3]); crc != want {
		return fmt.Errorf("%w: index crc32c %08x, stored %08x", ErrCorrupt, crc, want)
	}
	return nil
}

package log

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
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
	return SegmentInfo{BaseOffset: s.base, NextOffset: s.next, FirstIndex: s.firstIndex, Entries: s.entries, Size: s.size, MaxTimestamp: s.maxTS, Created: s.created, Active: s.active}
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
	stopped bool  // scanEntries met the entry its caller asked for, at good
}

// scanSegment reads a whole segment, verifying every entry, and builds its
// index. It stops at the first torn or corrupt entry, or one whose base
// offset breaks the sequence, and reports where in good and err.
func scanSegment(f File, base int64, interval int) (scanResult, error) {
	return scanSegmentUntil(f, base, interval, math.MaxUint64)
}

// scanSegmentUntil is scanSegment stopping before the first entry whose
// Raft index is above through (r.stopped, r.good its position).
func scanSegmentUntil(f File, base int64, interval int, through uint64) (scanResult, error) {
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
	var stop func(n uint64, e *entryInfo) bool
	if through != math.MaxUint64 {
		stop = func(n uint64, _ *entryInfo) bool { return r.header.firstIndex+n > through }
	}
	err = scanEntries(sc, base, &r, stop)
	return r, err
}

// scanEntries continues a scan: it applies the entries sc reads to r (which
// describes the segment up to sc's position) until the end, the first bad
// entry (r.err), or the first entry for which stop holds (r.stopped). It
// returns only I/O errors.
func scanEntries(sc *scanner, base int64, r *scanResult, stop func(n uint64, e *entryInfo) bool) error {
	for {
		pos, _, e, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err == nil && e.baseOffset != r.next {
			err = fmt.Errorf("%w: entry base offset %d, want %d", ErrCorrupt, e.baseOffset, r.next)
		}
		if err == nil && e.typ == entrySegmentHeader {
			err = fmt.Errorf("%w: segment header inside the segment", ErrCorrupt)
		}
		if err != nil {
			if isIOError(err) {
				return err
			}
			r.err = err
			return nil
		}
		if stop != nil && stop(r.entries, &e) {
			r.stopped = true
			return nil
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
	return l.writeIndexFilesAs(s, m, "")
}

// writeIndexFilesAs is writeIndexFiles to the index files' names followed
// by suffix (an install stages them as ".copy").
func (l *Log) writeIndexFilesAs(s *segment, m *memIndex, suffix string) error {
	f := footer{
		segSize: s.size, baseOffset: s.base, nextOffset: s.next, firstIndex: s.firstIndex,
		entries: s.entries, maxTS: s.maxTS, created: s.created,
	}
	f.magic, f.count = offsetIndexMagic, uint32(len(m.offsets))
	if err := l.writeFileAtomic(segmentPath(s.dir, s.base, indexSuffix)+suffix, encodeIndexFile(m.encodeOffsets(nil), f)); err != nil {
		return err
	}
	f.magic, f.count = timeIndexMagic, uint32(len(m.times))
	if err := l.writeFileAtomic(segmentPath(s.dir, s.base, timeIndexSuffix)+suffix, encodeIndexFile(m.encodeTimes(nil), f)); err != nil {
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

// readFooter reads and checks the footer of an open index file: its CRC,
// its base offset, and that the file holds exactly the entries it counts.
// It returns the footer and the CRC the entries must have.
func readFooter(f File, magic string, base int64, esize int) (footer, uint32, error) {
	size, err := f.Size()
	if err != nil {
		return footer{}, 0, err
	}
	if size < footerSize {
		return footer{}, 0, fmt.Errorf("%w: %d bytes, shorter than an index footer", ErrCorrupt, size)
	}
	b := make([]byte, footerSize)
	if _, err := f.ReadAt(b, size-footerSize); err != nil {
		return footer{}, 0, err
	}
	ft, crc, err := parseFooter(b, magic)
	if err != nil {
		return footer{}, 0, err
	}
	if ft.baseOffset != base || int64(ft.count)*int64(esize)+footerSize != size {
		return footer{}, 0, fmt.Errorf("%w: index footer (base %d, %d entries) does not match its name (base %d) or size (%d bytes)",
			ErrCorrupt, ft.baseOffset, ft.count, base, size)
	}
	return ft, crc, nil
}

// readFooterFile opens an index file and reads its footer.
func readFooterFile(fs FS, name, magic string, base int64, esize int) (footer, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return footer{}, err
	}
	defer f.Close()
	ft, _, err := readFooter(f, magic, base, esize)
	if err != nil {
		return footer{}, fmt.Errorf("%s: %w", name, err)
	}
	return ft, nil
}

// verifyIndexFile checks the CRC of an index file's entries, reading them
// in chunks.
func verifyIndexFile(f File, count uint32, esize int, want uint32) error {
	n := int64(count) * int64(esize)
	buf := make([]byte, min(64<<10, n))
	var crc uint32
	for pos := int64(0); pos < n; {
		c := min(int64(len(buf)), n-pos)
		if _, err := f.ReadAt(buf[:c], pos); err != nil {
			return err
		}
		crc = crc32.Update(crc, crcTable, buf[:c])
		pos += c
	}
	if crc != want {
		return fmt.Errorf("%w: index entries crc32c %08x, stored %08x", ErrCorrupt, crc, want)
	}
	return nil
}

package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

const (
	defaultSegmentBytes  = 128 << 20
	maxSegmentBytes      = 2 << 30 // index positions are uint32
	defaultIndexInterval = 4096
)

// maxOpenSegments bounds the closed segments whose files are open at once.
var maxOpenSegments = 32

// position is how far the log has been written, or synced. seq counts bytes
// ever written and never goes back, so waiters can compare it across rolls.
type position struct {
	seq       uint64
	next      int64
	nextIndex uint64
}

// Log is one partition's append-only log.
type Log struct {
	dir  string
	fs   FS
	opts Options

	mu     sync.Mutex
	segs   []*segment // oldest first; the last is active
	active *segment
	start  int64 // the oldest segment's base offset
	// floor is the log start AdvanceStart set (the log start file); the
	// log start offset is startLocked.
	floor   int64
	hw      int64
	written position
	synced  position
	// gen changes at every truncation: a waiter whose bytes may have been
	// cut learns it from gen.
	gen uint64
	// failed is set when an fsync fails: the page cache may have dropped
	// dirty pages, so nothing more is appended until the log is reopened.
	failed error
	// repairAt >= 0: a failed write left bytes after this position of the
	// active segment that could not be cut yet.
	repairAt int64
	closing  bool
	closed   bool
	// installing is set while an Install stages segments.
	installing bool
	changed    chan struct{}
	// syncing: the FsyncAlways syncer runs (commit.go); it runs only
	// while written bytes wait for their fsync.
	syncing bool
	// syncDue: an FsyncInterval sync is scheduled on syncTimer (commit.go).
	syncDue   bool
	syncTimer *time.Timer
	durable   *sync.Cond     // appenders wait for their sync
	wg        sync.WaitGroup // the syncer and a due interval sync

	tick   uint64
	report RecoveryReport
	// cleaner is what the cleaner knows of this log (compact.go).
	cleaner cleanerState
}

// Open opens or creates the log in dir, recovering the tail.
func Open(dir string, opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = OSFS{}
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = defaultSegmentBytes
	}
	opts.SegmentBytes = min(opts.SegmentBytes, maxSegmentBytes)
	if opts.IndexIntervalBytes <= 0 {
		opts.IndexIntervalBytes = defaultIndexInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Fsync.Mode == FsyncInterval && opts.Fsync.Interval <= 0 {
		return nil, fmt.Errorf("log: fsync interval %v: want a positive duration", opts.Fsync.Interval)
	}
	l := &Log{dir: dir, fs: opts.FS, opts: opts, repairAt: -1, changed: make(chan struct{})}
	l.durable = sync.NewCond(&l.mu)
	if err := l.load(); err != nil {
		l.closeHandles()
		return nil, fmt.Errorf("log: open %s: %w", dir, err)
	}
	// The syncer (FsyncAlways) or the interval's timer (FsyncInterval)
	// starts with the first write (commit.go).
	return l, nil
}

// load lists the directory, checks closed segments' index footers and
// recovers the active segment.
func (l *Log) load() error {
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	if err := l.recoverInstall(); err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		s, err := l.createSegment(0, 1)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
	} else {
		for i, base := range bases[:len(bases)-1] {
			s, err := l.loadClosed(base, bases[i+1])
			if err != nil {
				return err
			}
			l.segs = append(l.segs, s)
		}
		s, err := l.recoverActive(bases[len(bases)-1])
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	for i := 1; i < len(l.segs); i++ {
		if p, s := l.segs[i-1], l.segs[i]; p.next != s.base {
			return fmt.Errorf("%w: segment %s ends at offset %d but the next one starts at %d", ErrCorrupt, p.path(), p.next, s.base)
		}
	}
	l.active = l.segs[len(l.segs)-1]
	l.start = l.segs[0].base
	l.written = position{next: l.active.next, nextIndex: l.active.nextIndex()}
	l.synced = l.written
	l.hw = l.written.next
	if l.opts.ManualHighWatermark {
		l.hw = l.start
	}
	if err := l.loadFloor(); err != nil {
		return err
	}
	if err := l.loadCleaner(); err != nil {
		return err
	}
	l.report.Segments = len(l.segs)
	return nil
}

// listSegments returns the bases of the directory's segments, ascending,
// after removing what an unfinished write, install or deletion left.
func (l *Log) listSegments() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	indexes := map[int64][]string{}
	for _, name := range names {
		if strings.HasSuffix(name, tmpSuffix) || strings.HasSuffix(name, copySuffix) {
			// An index write that did not finish (the rename never
			// happened), or an install that did not commit.
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, err
			}
			continue
		}
		base, suf, ok := parseSegmentName(name)
		switch {
		case !ok:
		case suf == logSuffix:
			bases = append(bases, base)
		default:
			indexes[base] = append(indexes[base], name)
		}
	}
	slices.Sort(bases)
	for base, files := range indexes {
		if _, ok := slices.BinarySearch(bases, base); !ok {
			// Left by a deletion that removed the segment, then crashed.
			for _, name := range files {
				if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
					return nil, err
				}
			}
		}
	}
	return bases, nil
}

// loadClosed describes a closed segment from its index footers, or rebuilds
// its indexes when they do not check out.
func (l *Log) loadClosed(base, nextBase int64) (*segment, error) {
	s := &segment{dir: l.dir, base: base}
	size, err := l.fs.Stat(s.path())
	if err != nil {
		return nil, err
	}
	ft, err1 := readFooterFile(l.fs, segmentPath(l.dir, base, indexSuffix), offsetIndexMagic, base, offsetEntrySize)
	tt, err2 := readFooterFile(l.fs, segmentPath(l.dir, base, timeIndexSuffix), timeIndexMagic, base, timeEntrySize)
	if err1 == nil && err2 == nil && ft.segSize == size && tt.segSize == size && ft.nextOffset == nextBase &&
		tt.nextOffset == nextBase && ft.entries == tt.entries && ft.firstIndex == tt.firstIndex {
		s.next, s.firstIndex, s.entries, s.size, s.maxTS, s.created = ft.nextOffset, ft.firstIndex, ft.entries, size, ft.maxTS, ft.created
		return s, nil
	}
	for _, err := range []error{err1, err2} {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	// Rebuild from the segment itself.
	f, err := l.fs.OpenFile(s.path(), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := scanSegment(f, base, l.opts.IndexIntervalBytes)
	if err != nil {
		return nil, fmt.Errorf("rebuild index of %s: %w", s.path(), err)
	}
	l.report.RebuiltIndexes++
	l.report.ScannedBytes += r.size
	s.next, s.entries, s.size, s.maxTS = r.next, r.entries, size, r.maxTS
	s.firstIndex, s.created = r.header.firstIndex, r.header.created
	if r.err != nil {
		// Corruption inside a closed segment: keep what is readable, reads
		// of the rest return ErrCorrupt. The segment still ends where the
		// next one begins.
		s.next = nextBase
		if r.good == 0 && len(l.segs) > 0 {
			s.firstIndex = l.segs[len(l.segs)-1].nextIndex()
		}
	}
	if err := l.writeIndexFiles(s, &r.ib.idx); err != nil {
		// Not fatal: keep this segment's index in memory.
		s.mem = &r.ib.idx
	}
	s.idxChecked = true
	return s, nil
}

// recoverActive scans the last segment, cuts it at the first torn or
// corrupt entry, and makes it the active segment.
func (l *Log) recoverActive(base int64) (*segment, error) {
	s := &segment{dir: l.dir, base: base, active: true}
	f, err := l.fs.OpenFile(s.path(), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.h = &handle{f: f}
	r, err := scanSegment(f, base, l.opts.IndexIntervalBytes)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", s.path(), err)
	}
	l.report.ScannedBytes += r.size
	if r.err != nil {
		l.report.TruncatedAt = r.good
		l.report.TruncatedBytes = r.size - r.good
		if err := f.Truncate(r.good); err != nil {
			return nil, err
		}
		if r.good == 0 {
			// Torn segment header: the segment was being created (or its
			// header rewritten for an empty log), so it holds no entry.
			r.header = segmentHeader{baseOffset: base, firstIndex: 1, created: l.opts.Now()}
			if n := len(l.segs); n > 0 {
				r.header.firstIndex = l.segs[n-1].nextIndex()
			}
			hdr := appendSegmentHeader(nil, r.header)
			if _, err := f.WriteAt(hdr, 0); err != nil {
				return nil, err
			}
			r.good = int64(len(hdr))
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
	}
	s.size = r.good
	s.next, s.entries, s.maxTS = r.next, r.entries, r.maxTS
	s.firstIndex, s.created = r.header.firstIndex, r.header.created
	s.ib = r.ib
	s.mem = &s.ib.idx
	// The active segment's indexes live in memory; files left by a roll
	// that crashed are stale.
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := l.fs.Remove(segmentPath(l.dir, base, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return s, nil
}

// createSegment creates an empty segment file holding only its header,
// durably.
func (l *Log) createSegment(base int64, firstIndex uint64) (*segment, error) {
	s := &segment{dir: l.dir, base: base, next: base, firstIndex: firstIndex, maxTS: -1, created: l.opts.Now(), active: true}
	f, err := l.fs.OpenFile(s.path(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: create %s: %w", s.path(), err)
	}
	hdr := appendSegmentHeader(nil, segmentHeader{baseOffset: base, firstIndex: firstIndex, created: s.created})
	_, err = f.WriteAt(hdr, 0)
	if err == nil {
		l.countWritten(len(hdr))
		err = timedSync(f, l.opts.Hooks.Fsync)
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		f.Close()
		_ = l.fs.Remove(s.path())
		return nil, fmt.Errorf("log: create %s: %w", s.path(), err)
	}
	s.h = &handle{f: f}
	s.size = int64(len(hdr))
	s.ib = newIndexBuilder(l.opts.IndexIntervalBytes)
	s.mem = &s.ib.idx
	return s, nil
}

func (l *Log) countWritten(n int) {
	if l.opts.Hooks.Written != nil {
		l.opts.Hooks.Written(n)
	}
}

// Close syncs and closes the log. Appends waiting for a sync get it first.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	l.stopSyncTimerLocked()
	l.mu.Unlock()
	l.wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.failed == nil && l.written.seq != l.synced.seq {
		if err = timedSync(l.active.h.f, l.opts.Hooks.Fsync); err == nil {
			l.synced = l.written
		}
	}
	l.closed = true
	l.closeHandles()
	close(l.changed)
	l.durable.Broadcast()
	if err != nil {
		return fmt.Errorf("log: close %s: %w", l.dir, err)
	}
	return nil
}

// closeHandles closes the segments no reader holds; a held one (a read
// that found its segment before Close) is closed by its reader's release,
// so a read under way finishes instead of meeting a closed file.
func (l *Log) closeHandles() {
	for _, s := range l.segs {
		if s.refs == 0 {
			s.closeHandle()
		}
	}
}

// Recovery reports what Open found, and the indexes rebuilt since (a
// closed segment's index entries are CRC-checked when first read).
func (l *Log) Recovery() RecoveryReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.report
}

// Dir is the log's directory: a partition keeps its side files there.
func (l *Log) Dir() string { return l.dir }

// StartOffset is the log start offset: the first offset readable, below
// which reads are out of range. Retention moves it by whole segments,
// AdvanceStart to any offset up to the high watermark.
func (l *Log) StartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startLocked()
}

// BaseOffset is the base offset of the oldest segment, at or below
// StartOffset: where the log restarts when truncated to nothing.
func (l *Log) BaseOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start
}

// NextOffset is the offset the next appended record will get.
func (l *Log) NextOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active.next
}

// HighWatermark is the offset below which records are readable.
func (l *Log) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.info()
	}
	return out
}

// SetSegmentLimits changes when the active segment rolls (as
// Options.SegmentBytes and SegmentAge); it applies from the next append.
func (l *Log) SetSegmentLimits(bytes int64, age time.Duration) {
	if bytes <= 0 {
		bytes = defaultSegmentBytes
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts.SegmentBytes = min(bytes, maxSegmentBytes)
	l.opts.SegmentAge = max(age, 0)
}

// Size is the bytes on disk of all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// FirstIndex and LastIndex bound the stored Raft indexes (0, 0 when empty).
func (l *Log) FirstIndex() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		if s.entries > 0 {
			return s.firstIndex
		}
	}
	return 0
}

// LastIndex is the Raft index of the last stored entry.
func (l *Log) LastIndex() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.hasEntriesLocked() {
		return 0
	}
	return l.active.nextIndex() - 1
}

func (l *Log) hasEntriesLocked() bool {
	// From the newest: closed segments always hold entries, so this is
	// O(1) but for a segment rebuilt around corruption.
	for i := len(l.segs) - 1; i >= 0; i-- {
		if l.segs[i].entries > 0 {
			return true
		}
	}
	return false
}

// segmentForOffset returns the segment holding offset: the last whose base
// is <= offset.
func (l *Log) segmentForOffset(off int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > off })
	if i == 0 {
		return l.segs[0]
	}
	return l.segs[i-1]
}

// segmentForIndex returns the segment holding a Raft index, or nil.
func (l *Log) segmentForIndex(index uint64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].firstIndex > index })
	for i > 0 {
		if s := l.segs[i-1]; s.containsIndex(index) {
			return s
		} else if s.entries > 0 {
			return nil
		}
		i--
	}
	return nil
}

// checkOpenLocked fails once Close has begun.
func (l *Log) checkOpenLocked() error {
	if l.closing || l.closed {
		return ErrClosed
	}
	return nil
}

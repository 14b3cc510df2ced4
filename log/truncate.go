package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TruncateFrom removes every record at or after offset (the tail). Batches
// are never split: the batch holding offset goes too, and everything after
// it, logd entries included. The high watermark moves down with the end.
func (l *Log) TruncateFrom(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return err
	}
	if offset >= l.active.next {
		return nil
	}
	if offset < l.start {
		return &OutOfRangeError{Offset: offset, StartOffset: l.start, HighWatermark: l.hw}
	}
	k := l.indexOf(l.segmentForOffset(offset))
	s := l.segs[k]
	stop := func(n uint64, e *entryInfo) bool { return e.typ == entryBatch && e.nextOffset > offset }
	if s.active {
		cp, _ := s.mem.byOffset(uint32(offset - s.base))
		return l.cutActiveLocked(cp, stop)
	}
	pos, err := l.findCutLocked(s, stop)
	if err != nil {
		return err
	}
	return l.truncateLocked(k, pos)
}

// TruncateIndexFrom removes the entries at and after a Raft index.
func (l *Log) TruncateIndexFrom(index uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return err
	}
	if !l.hasEntriesLocked() || index >= l.active.nextIndex() {
		return nil
	}
	k := 0
	for i, s := range l.segs {
		if s.entries > 0 && s.firstIndex <= index {
			k = i
		}
	}
	s := l.segs[k]
	ord := uint64(0)
	if index > s.firstIndex {
		ord = index - s.firstIndex
	}
	stop := func(n uint64, _ *entryInfo) bool { return n == ord }
	if s.active {
		cp, _ := s.mem.byOrdinal(uint32(ord))
		return l.cutActiveLocked(cp, stop)
	}
	pos, err := l.findCutLocked(s, stop)
	if err != nil {
		return err
	}
	return l.truncateLocked(k, pos)
}

// cutActiveLocked truncates the active segment at the first entry for
// which stop holds, scanning from cp, an entry of its in-memory index (or
// the zero entry), and resuming the index build there: the cost is
// bounded by the index interval, not the segment size.
func (l *Log) cutActiveLocked(cp indexEntry, stop func(n uint64, e *entryInfo) bool) (err error) {
	defer l.failTruncation(&err)
	s := l.active
	r := scanResult{
		header:  segmentHeader{baseOffset: s.base, firstIndex: s.firstIndex, created: s.created},
		good:    int64(orHeader(cp).pos),
		next:    s.base + int64(cp.relOff),
		entries: uint64(cp.ordinal),
		ib:      s.ib.rewind(cp),
	}
	r.maxTS = r.ib.maxTS
	if err := scanEntries(newScanner(s.h.f, r.good, s.size, 0), s.base, &r, stop); err != nil {
		return fmt.Errorf("log: truncate %s: %w", s.path(), err)
	}
	if err := s.h.f.Truncate(r.good); err != nil {
		return fmt.Errorf("log: truncate %s at %d: %w", s.path(), r.good, err)
	}
	if err := timedSync(s.h.f, l.opts.Hooks.Fsync); err != nil {
		return fmt.Errorf("log: fsync %s: %w", s.path(), err)
	}
	if err := l.forgetCleanedLocked(r.next); err != nil {
		return err
	}
	l.applyCutLocked(s, r)
	return nil
}

// failTruncation makes a truncation that failed part way leave the log
// refusing appends until it is reopened (recovery sorts it out).
func (l *Log) failTruncation(err *error) {
	if *err != nil && l.failed == nil {
		l.failed = fmt.Errorf("%w (appends refused until the log is reopened)", *err)
	}
}

func (l *Log) indexOf(s *segment) int {
	for i, c := range l.segs {
		if c == s {
			return i
		}
	}
	return -1
}

// findCutLocked returns the position of the first entry of s (the n-th)
// for which stop holds; the segment's end if none does.
func (l *Log) findCutLocked(s *segment, stop func(n uint64, e *entryInfo) bool) (int64, error) {
	h, err := l.acquireLocked(s)
	if err != nil {
		return 0, err
	}
	defer l.releaseLocked(s)
	sc := newScanner(h.f, segmentHeaderSize, s.size, 0)
	for n := uint64(0); ; n++ {
		pos, _, e, err := sc.next()
		if err == io.EOF {
			return s.size, nil
		}
		if err != nil {
			// Cut at the damage: nothing after it is readable anyway.
			if isIOError(err) {
				return 0, corruptAt(s.path(), pos, err)
			}
			return pos, nil
		}
		if stop(n, &e) {
			return pos, nil
		}
	}
}

// truncateLocked cuts segment k at pos and removes every later segment,
// newest first (so a crash leaves a shorter but whole log), then makes k the
// active segment and publishes the new end. It rescans segment k.
func (l *Log) truncateLocked(k int, pos int64) (err error) {
	defer l.failTruncation(&err)
	for i := len(l.segs) - 1; i > k; i-- {
		if err := l.removeSegmentLocked(l.segs[i]); err != nil {
			return err
		}
		l.segs = l.segs[:i]
	}
	s := l.segs[k]
	if !s.active {
		// A closed segment becomes the active one: a new segment value
		// with its own read-write file, so readers holding the old one
		// (and its index files) are not disturbed, and no state of the
		// closed segment's lazy index check carries over.
		f, err := l.fs.OpenFile(s.path(), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("log: truncate %s: %w", s.path(), err)
		}
		old := s
		s = &segment{dir: old.dir, base: old.base, firstIndex: old.firstIndex, created: old.created, active: true, h: &handle{f: f}}
		old.deleted = true
		if old.h != nil && old.refs == 0 {
			old.closeHandle()
		}
		l.segs[k] = s
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := l.fs.Remove(segmentPath(s.dir, s.base, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	f := s.h.f
	if err := f.Truncate(pos); err != nil {
		return fmt.Errorf("log: truncate %s at %d: %w", s.path(), pos, err)
	}
	if err := timedSync(f, l.opts.Hooks.Fsync); err != nil {
		return fmt.Errorf("log: fsync %s: %w", s.path(), err)
	}
	// Rescan what is left: it rebuilds the in-memory index and the
	// segment's metadata.
	r, err := scanSegment(f, s.base, l.opts.IndexIntervalBytes)
	if err != nil {
		return fmt.Errorf("log: truncate %s: %w", s.path(), err)
	}
	if r.err != nil {
		if r.good < segmentHeaderSize {
			return fmt.Errorf("log: truncate %s: header unreadable: %w", s.path(), r.err)
		}
		if err := f.Truncate(r.good); err != nil {
			return err
		}
	}
	if err := l.forgetCleanedLocked(r.next); err != nil {
		return err
	}
	l.applyCutLocked(s, r)
	return nil
}

// applyCutLocked makes s, cut as r describes, the active segment and
// publishes the new end of the log.
func (l *Log) applyCutLocked(s *segment, r scanResult) {
	s.size = r.good
	s.next, s.entries, s.maxTS = r.next, r.entries, r.maxTS
	s.ib = r.ib
	s.mem = &s.ib.idx
	l.active = s
	l.repairAt = -1
	l.gen++
	l.written = position{seq: l.written.seq, next: s.next, nextIndex: s.nextIndex()}
	l.synced = l.written
	if l.opts.ManualHighWatermark {
		l.setHWLocked(min(l.hw, s.next))
	} else {
		l.publishLocked()
	}
	l.durable.Broadcast()
}

// removeSegmentLocked removes a segment's file, durably (the directory is
// fsynced before the next segment goes, so a crash leaves a log without
// holes), then its index files (orphans are removed on open), and closes
// its file once no reader holds it.
func (l *Log) removeSegmentLocked(s *segment) error {
	if err := l.fs.Remove(s.path()); err != nil {
		return fmt.Errorf("log: remove %s: %w", s.path(), err)
	}
	s.deleted = true
	s.active = false
	if s.h != nil && s.refs == 0 {
		s.closeHandle()
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: remove %s: sync directory: %w", s.path(), err)
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := l.fs.Remove(segmentPath(s.dir, s.base, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log: remove %s: %w", segmentPath(s.dir, s.base, suf), err)
		}
	}
	return nil
}

// DeleteSegmentsBefore deletes whole closed segments whose records are all
// below offset, oldest first, never the active one, and advances the start
// offset. Records at or above the high watermark are never deleted. It
// returns what it deleted.
func (l *Log) DeleteSegmentsBefore(offset int64) ([]SegmentInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return nil, err
	}
	offset = min(offset, l.hw)
	var deleted []SegmentInfo
	for len(l.segs) > 1 && !l.segs[0].active && l.segs[0].next <= offset {
		s := l.segs[0]
		// Readers that come after this see the new start offset.
		l.segs = l.segs[1:]
		l.start = l.segs[0].base
		if err := l.removeSegmentLocked(s); err != nil {
			if !s.deleted {
				l.segs = append([]*segment{s}, l.segs...)
				l.start = s.base
			}
			return deleted, err
		}
		deleted = append(deleted, s.info())
	}
	return deleted, nil
}

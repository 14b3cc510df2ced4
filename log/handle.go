package log

import (
	"fmt"
	"os"
)

// Segment file handles: the active segment's file is always open; closed
// segments' files are opened on demand, at most maxOpenSegments at once,
// and closed least recently used first once no reader holds them.

// acquireLocked opens s if needed and holds it until release.
func (l *Log) acquireLocked(s *segment) (*handle, error) {
	s.refs++
	l.tick++
	s.lruTick = l.tick
	if s.h == nil {
		h, err := l.openHandle(s)
		if err != nil {
			s.refs--
			return nil, err
		}
		s.h = h
		l.evictLocked()
	}
	return s.h, nil
}

// release drops a hold taken by acquireLocked.
func (l *Log) release(s *segment) {
	l.mu.Lock()
	l.releaseLocked(s)
	l.mu.Unlock()
}

func (l *Log) releaseLocked(s *segment) {
	s.refs--
	if s.refs > 0 || (s.active && !l.closed) {
		return
	}
	if s.deleted || l.closed {
		s.closeHandle()
	}
}

// evictLocked closes the least recently used unreferenced closed segments
// while more than maxOpenSegments are open. It runs when a file is opened,
// so the bound holds but for segments held by readers at that moment.
func (l *Log) evictLocked() {
	for {
		open := 0
		var victim *segment
		for _, s := range l.segs {
			if s.h == nil || s.active {
				continue
			}
			open++
			if s.refs == 0 && (victim == nil || s.lruTick < victim.lruTick) {
				victim = s
			}
		}
		if open <= maxOpenSegments || victim == nil {
			return
		}
		victim.closeHandle()
	}
}

// openHandle opens a closed segment's file; its index files are opened and
// checked later, in ensureIndex, outside the log's lock.
func (l *Log) openHandle(s *segment) (*handle, error) {
	f, err := l.fs.OpenFile(s.path(), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("log: open segment: %w", err)
	}
	return &handle{f: f}, nil
}

func (s *segment) closeHandle() {
	if s.h == nil {
		return
	}
	s.h.f.Close()
	s.h.closeIndexes()
	s.h = nil
}

func (h *handle) closeIndexes() {
	if h.off != nil {
		h.off.f.Close()
		h.off = nil
	}
	if h.times != nil {
		h.times.f.Close()
		h.times = nil
	}
}

// ensureIndex makes sure a closed segment's index files (open in h) are
// checked: footer against the segment, CRC over every entry. An index that
// fails is rebuilt from the segment; if it cannot be written, the segment
// keeps it in memory (s.mem is then set under idxMu and l.mu).
// It returns the memory index to use instead of the files, or nil.
func (l *Log) ensureIndex(s *segment, h *handle) (*memIndex, error) {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.fallback != nil {
		return s.fallback, nil
	}
	if h.off != nil {
		return nil, nil // opened and checked by an earlier reader of h
	}
	ok := true
	for _, x := range []struct {
		fi    **fileIndex
		name  string
		esize int
	}{{&h.off, indexSuffix, offsetEntrySize}, {&h.times, timeIndexSuffix, timeEntrySize}} {
		f, err := l.fs.OpenFile(segmentPath(s.dir, s.base, x.name), os.O_RDONLY, 0)
		if err != nil {
			ok = false
			break
		}
		*x.fi = &fileIndex{f: f, esize: x.esize}
	}
	if ok {
		if err := l.loadIndexFiles(s, h); err != nil {
			ok = false
		}
	}
	if ok {
		s.idxChecked = true
		return nil, nil
	}
	h.closeIndexes()
	// Rebuild: the files are missing, short, or garbage.
	r, err := scanSegment(h.f, s.base, l.opts.IndexIntervalBytes)
	if err != nil {
		return nil, fmt.Errorf("log: rebuild index of %s: %w", s.path(), err)
	}
	l.mu.Lock()
	deleted := s.deleted
	l.mu.Unlock()
	s.fallback = &r.ib.idx
	if !deleted && l.writeIndexFiles(s, &r.ib.idx) == nil {
		l.mu.Lock()
		l.report.RebuiltIndexes++
		l.mu.Unlock()
	}
	return s.fallback, nil
}

// loadIndexFiles checks the index files open in h against s and sets
// their entry counts from their footers.
func (l *Log) loadIndexFiles(s *segment, h *handle) error {
	for _, x := range []struct {
		fi    *fileIndex
		magic string
	}{{h.off, offsetIndexMagic}, {h.times, timeIndexMagic}} {
		ft, crc, err := readFooter(x.fi.f, x.magic, s.base, x.fi.esize)
		if err != nil {
			return err
		}
		if ft.segSize != s.size || ft.nextOffset != s.next || ft.firstIndex != s.firstIndex || ft.entries != s.entries {
			return fmt.Errorf("%w: index footer does not match its segment", ErrCorrupt)
		}
		if !s.idxChecked {
			if err := verifyIndexFile(x.fi.f, ft.count, x.fi.esize, crc); err != nil {
				return err
			}
		}
		x.fi.count = int(ft.count)
	}
	return nil
}

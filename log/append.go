package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/logd/logd/internal/batch"
)

// errTruncated is returned to an appender whose bytes a concurrent
// truncation may have removed before they were durable.
var errTruncated = errors.New("log: truncated while the append waited for fsync")

// Append stores one batch as the next Raft-less entry and returns its header
// with the assigned offsets, once durable per the fsync policy. b is
// modified in place (base offset, leader epoch) and not retained. The entry
// gets the next Raft index (LastIndex()+1, or the first index the empty
// log was truncated to) and term 0. It is AppendStart, then its wait.
func (l *Log) Append(b []byte) (batch.Info, error) {
	info, wait, err := l.AppendStart(b)
	if err != nil {
		return info, err
	}
	return info, wait()
}

// AppendStart is Append up to the write: b gets its offsets and is written
// in order, under the log's lock, before AppendStart returns (b is not
// retained); wait returns once it is durable per the fsync policy, with
// Append's errors (a failed fsync, a truncation that may have cut it, a
// close before it was synced). Nothing may be acknowledged before wait
// returned nil. Readers see the batch only once the high watermark covers
// it: with FsyncAlways, once synced.
//
// wait may be called from any goroutine, more than once, late: the waits
// of batches written meanwhile share fsyncs (group commit), so an appender
// can write its next batch while the previous one's fsync runs.
func (l *Log) AppendStart(b []byte) (info batch.Info, wait func() error, err error) {
	info, err = checkBatch(b)
	if err != nil {
		return info, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.prepareLocked(l.active.nextIndex()); err != nil {
		return info, nil, err
	}
	info.BaseOffset = l.active.next
	info.LeaderEpoch = 0
	batch.SetBaseOffset(b, info.BaseOffset)
	batch.SetLeaderEpoch(b, 0)
	e := entryInfo{typ: entryBatch, size: len(b), baseOffset: info.BaseOffset, nextOffset: info.NextOffset(), maxTS: info.MaxTimestamp}
	seq, err := l.writeLocked(b, []entryInfo{e})
	if err != nil {
		return info, nil, err
	}
	gen := l.wroteLocked()
	return info, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.waitDurableLocked(seq, gen)
	}, nil
}

// checkBatch verifies a batch given to the log: batch.CheckFrame (one
// whole batch, CRC right, at least one record) and the entry size. Only the
// frame: the records were validated where the batch came in (batch.Validate
// at produce and before Raft), and walking them again on every entry of
// every replica would double the cost of an append.
func checkBatch(b []byte) (batch.Info, error) {
	info, err := batch.CheckFrame(b)
	if err != nil {
		return info, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	if len(b) > maxEntrySize {
		return info, fmt.Errorf("%w: %d bytes, more than the %d a log entry may hold", ErrInvalidBatch, len(b), maxEntrySize)
	}
	return info, nil
}

// AppendEntries stores Raft entries, durable on return. The first index
// must follow LastIndex, or be any index when the log holds no entry.
// Batch entries' data is copied, with the base offset and leader epoch
// (the term, which must fit in 31 bits) rewritten.
func (l *Log) AppendEntries(es []Entry) error {
	if len(es) == 0 {
		return nil
	}
	infos := make([]batch.Info, len(es))
	size := 0
	for i, e := range es {
		if i > 0 && e.Index != es[i-1].Index+1 {
			return fmt.Errorf("log: append entries: index %d follows %d", e.Index, es[i-1].Index)
		}
		if e.Kind == KindBatch {
			info, err := checkBatch(e.Data)
			if err != nil {
				return fmt.Errorf("log: append entry %d: %w", e.Index, err)
			}
			if e.Term > math.MaxInt32 {
				return fmt.Errorf("log: append entry %d: term %d does not fit a batch's leader epoch", e.Index, e.Term)
			}
			infos[i] = info
			size += len(e.Data)
		} else {
			if raftHeaderSize+len(e.Data) > maxEntrySize {
				return fmt.Errorf("log: append entry %d: %d bytes, more than the %d a log entry may hold", e.Index, len(e.Data), maxEntrySize)
			}
			size += raftHeaderSize + len(e.Data)
		}
	}
	if size > maxEntrySize*4 {
		return fmt.Errorf("log: append entries: %d bytes at once", size)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.prepareLocked(es[0].Index); err != nil {
		return err
	}
	buf := make([]byte, 0, size)
	meta := make([]entryInfo, len(es))
	next := l.active.next
	for i, e := range es {
		start := len(buf)
		if e.Kind == KindBatch {
			buf = append(buf, e.Data...)
			b := buf[start:]
			batch.SetBaseOffset(b, next)
			batch.SetLeaderEpoch(b, int32(e.Term))
			infos[i].BaseOffset = next
			meta[i] = entryInfo{typ: entryBatch, baseOffset: next, nextOffset: infos[i].NextOffset(), maxTS: infos[i].MaxTimestamp}
		} else {
			buf = appendRaftEntry(buf, next, e.Kind, e.Term, e.Data)
			meta[i] = entryInfo{typ: entryRaft, baseOffset: next, nextOffset: next}
		}
		meta[i].size = len(buf) - start
		next = meta[i].nextOffset
	}
	seq, err := l.writeLocked(buf, meta)
	if err != nil {
		return err
	}
	return l.waitDurableLocked(seq, l.wroteLocked())
}

// prepareLocked readies the active segment for an append at Raft index
// index: open, not failed, a failed write cut back, rolled if due, and its
// header rewritten if the log is empty and index starts it anew.
func (l *Log) prepareLocked(index uint64) error {
	if err := l.checkOpenLocked(); err != nil {
		return err
	}
	if l.failed != nil {
		return l.failed
	}
	if err := l.repairLocked(); err != nil {
		return err
	}
	if !l.hasEntriesLocked() {
		// A header rewrite that failed left no header (size 0): rewrite it
		// even for the old first index.
		if index != l.active.firstIndex || l.active.size < segmentHeaderSize {
			if err := l.restartIndexLocked(index); err != nil {
				return err
			}
		}
	} else if want := l.active.nextIndex(); index != want {
		return fmt.Errorf("log: append at index %d, want %d", index, want)
	}
	s := l.active
	if s.hasOffsets() && (s.size >= l.opts.SegmentBytes ||
		(l.opts.SegmentAge > 0 && l.opts.Now().Sub(s.created) >= l.opts.SegmentAge)) {
		return l.rollLocked()
	}
	return nil
}

// repairLocked cuts the bytes a failed write left in the active segment.
func (l *Log) repairLocked() error {
	if l.repairAt < 0 {
		return nil
	}
	if err := l.active.h.f.Truncate(l.repairAt); err != nil {
		return fmt.Errorf("log: cut failed write in %s at %d: %w", l.active.path(), l.repairAt, err)
	}
	l.repairAt = -1
	return nil
}

// restartIndexLocked rewrites the header of the active segment, which holds
// no entry, so that its first entry gets Raft index index.
func (l *Log) restartIndexLocked(index uint64) error {
	s := l.active
	hdr := appendSegmentHeader(nil, segmentHeader{baseOffset: s.base, firstIndex: index, created: s.created})
	if err := s.h.f.Truncate(0); err != nil {
		return fmt.Errorf("log: rewrite header of %s: %w", s.path(), err)
	}
	if _, err := s.h.f.WriteAt(hdr, 0); err != nil {
		// The file holds no header now: the next append rewrites it
		// (prepareLocked), whatever its index.
		l.repairAt = 0
		s.size = 0
		return fmt.Errorf("log: rewrite header of %s: %w", s.path(), err)
	}
	l.countWritten(len(hdr))
	s.firstIndex = index
	s.size = int64(len(hdr))
	l.written.nextIndex = s.nextIndex()
	l.synced.nextIndex = s.nextIndex()
	return nil
}

// writeLocked writes buf, which holds the entries meta describes, at the
// end of the active segment and returns the write sequence number that
// makes them durable. On a failed write nothing changes: the partial bytes
// are cut (or will be, before the next write).
func (l *Log) writeLocked(buf []byte, meta []entryInfo) (uint64, error) {
	s := l.active
	pos := s.size
	if _, err := s.h.f.WriteAt(buf, pos); err != nil {
		if terr := s.h.f.Truncate(pos); terr != nil {
			l.repairAt = pos
		}
		return 0, fmt.Errorf("log: append to %s at position %d: %w", s.path(), pos, err)
	}
	for i := range meta {
		e := &meta[i]
		s.ib.add(s.base, s.entries, pos, e)
		s.entries++
		s.next = e.nextOffset
		if e.typ == entryBatch && e.maxTS > s.maxTS {
			s.maxTS = e.maxTS
		}
		pos += int64(e.size)
	}
	s.size = pos
	l.written = position{seq: l.written.seq + uint64(len(buf)), next: s.next, nextIndex: s.nextIndex()}
	l.countWritten(len(buf))
	return l.written.seq, nil
}

// Roll closes the active segment and starts a new one. A segment that owns
// no offset yet is not rolled (the new one would share its name).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return err
	}
	if l.failed != nil {
		return l.failed
	}
	if err := l.repairLocked(); err != nil {
		return err
	}
	return l.rollLocked()
}

// rollLocked fsyncs the active segment, starts the next one, then writes
// the old one's index files. A crash at any point leaves a log that opens:
// without the new segment the old one is still the tail; without index
// files they are rebuilt.
func (l *Log) rollLocked() error {
	s := l.active
	if !s.hasOffsets() {
		return nil
	}
	if err := timedSync(s.h.f, l.opts.Hooks.Fsync); err != nil {
		l.failed = fmt.Errorf("log: fsync %s: %w", s.path(), err)
		l.durable.Broadcast()
		return l.failed
	}
	l.synced = l.written
	l.publishLocked()
	l.durable.Broadcast()
	ns, err := l.createSegment(s.next, s.nextIndex())
	if err != nil {
		return err
	}
	s.active = false
	l.segs = append(l.segs, ns)
	l.active = ns
	if err := l.writeIndexFiles(s, s.mem); err != nil {
		// Keep the index in memory; the next Open rebuilds the files.
		s.fallback = s.mem
	}
	s.idxChecked = true
	s.mem = nil
	s.ib = nil
	if s.refs == 0 {
		l.evictLocked()
	}
	if l.opts.Hooks.Rolled != nil {
		l.opts.Hooks.Rolled(s.info())
	}
	return nil
}

package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/logd/logd/internal/batch"
)

// directWrite: AppendEntries writes a batch at least this large from the
// caller's bytes, with a write of its own, instead of copying it into one
// buffer with the other entries (a large copy costs more than a write).
const directWrite = 64 << 10

// errTruncated is returned to an appender whose bytes a concurrent
// truncation may have removed before they were durable.
var errTruncated = errors.New("log: truncated while the append waited for fsync")

// Append stores one batch as the next Raft-less entry and returns its header
// with the assigned offsets, once durable per the fsync policy. It checks
// the batch's frame (batch.CheckFrame) first: it is for batches that no
// layer above checked (tools, tests); a produce checks its batch once and
// calls AppendStart. b is modified in place (base offset, leader epoch) and
// not retained.
func (l *Log) Append(b []byte) (batch.Info, error) {
	c, err := batch.CheckFrame(b)
	if err != nil {
		return batch.Info{}, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	info, w, err := l.AppendStart(c)
	if err != nil {
		return info, err
	}
	return info, w.Wait()
}

// AppendStart stores one checked batch as the next Raft-less entry, up to
// the write: it gets the next offsets and leader epoch 0, rewritten in
// place in c's bytes, and the next Raft index (LastIndex()+1, or the first
// index the empty log was truncated to) with term 0, and is written in
// order, under the log's lock, before AppendStart returns (its bytes are
// not retained). The batch is not checked again: c proves it.
//
// The Written it returns waits until the batch is durable per the fsync
// policy, with Append's errors (a failed fsync, a truncation that may have
// cut it, a close before it was synced). Nothing may be acknowledged
// before its Wait returned nil. Readers see the batch only once the high
// watermark covers it: with FsyncAlways, once synced.
func (l *Log) AppendStart(c batch.Checked) (batch.Info, Written, error) {
	b := c.Bytes()
	info := c.Info()
	if err := checkSize(b); err != nil {
		return info, Written{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.prepareLocked(l.active.nextIndex()); err != nil {
		return info, Written{}, err
	}
	info.BaseOffset = l.active.next
	info.LeaderEpoch = 0
	batch.SetBaseOffset(b, info.BaseOffset)
	batch.SetLeaderEpoch(b, 0)
	e := entryInfo{typ: entryBatch, size: len(b), baseOffset: info.BaseOffset, nextOffset: info.NextOffset(), maxTS: info.MaxTimestamp}
	seq, err := l.writeLocked([]entryInfo{e}, b)
	if err != nil {
		return info, Written{}, err
	}
	return info, Written{l: l, seq: seq, gen: l.wroteLocked()}, nil
}

// Written is a batch AppendStart wrote, maybe not durable yet.
type Written struct {
	l        *Log
	seq, gen uint64
}

// Wait returns once the batch is durable per the fsync policy, or with
// why it may not be. It may be called from any goroutine, more than once,
// late: the waits of batches written meanwhile share fsyncs (group
// commit), so an appender can write its next batch while the previous
// one's fsync runs.
func (w Written) Wait() error {
	if w.l == nil {
		return fmt.Errorf("%w: not written", ErrInvalidBatch)
	}
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.waitDurableLocked(w.seq, w.gen)
}

// checkSize refuses what the log cannot store as a batch entry: no batch
// (the zero batch.Checked), or one larger than an entry may be. The frame
// and CRC were checked by whoever made the batch.Checked.
func checkSize(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: no batch", ErrInvalidBatch)
	}
	if len(b) > maxEntrySize {
		return fmt.Errorf("%w: %d bytes, more than the %d a log entry may hold", ErrInvalidBatch, len(b), maxEntrySize)
	}
	return nil
}

// AppendEntries stores Raft entries, durable on return. The first index
// must follow LastIndex, or be any index when the log holds no entry. A
// batch entry's bytes are its Batch (checked by the caller, and not
// again; its Data is not read): they get the next offsets and the term as
// leader epoch (it must fit in 31 bits), rewritten in place, so that the
// caller's copy carries the offsets the log assigned. Batches of at least
// directWrite bytes are written from the caller's bytes, each with its own
// write; smaller entries are copied together into one.
//
// The log is the one layer that assigns offsets and checks that indexes
// follow on: it holds the next offset and the next index under the lock
// that orders every write, so no caller can race it, and a Raft-less
// append (AppendStart) and a Raft one get both from the same place.
func (l *Log) AppendEntries(es []Entry) error {
	if len(es) == 0 {
		return nil
	}
	size, copied := 0, 0
	for i, e := range es {
		if i > 0 && e.Index != es[i-1].Index+1 {
			return fmt.Errorf("log: append entries: index %d follows %d", e.Index, es[i-1].Index)
		}
		if e.Kind == KindBatch {
			if err := checkSize(e.Batch.Bytes()); err != nil {
				return fmt.Errorf("log: append entry %d: %w", e.Index, err)
			}
			if e.Term > math.MaxInt32 {
				return fmt.Errorf("log: append entry %d: term %d does not fit a batch's leader epoch", e.Index, e.Term)
			}
			size += len(e.Batch.Bytes())
			if len(e.Batch.Bytes()) < directWrite {
				copied += len(e.Batch.Bytes())
			}
		} else {
			if raftHeaderSize+len(e.Data) > maxEntrySize {
				return fmt.Errorf("log: append entry %d: %d bytes, more than the %d a log entry may hold", e.Index, len(e.Data), maxEntrySize)
			}
			size += raftHeaderSize + len(e.Data)
			copied += raftHeaderSize + len(e.Data)
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
	// parts are written in order: the small entries copied together, the
	// large batches as they are. buf is the copies' memory, once.
	var parts [][]byte
	var buf []byte
	if copied > 0 {
		buf = make([]byte, 0, copied)
	}
	meta := make([]entryInfo, len(es))
	next := l.active.next
	for i, e := range es {
		if e.Kind == KindBatch {
			b, info := e.Batch.Bytes(), e.Batch.Info()
			batch.SetBaseOffset(b, next)
			batch.SetLeaderEpoch(b, int32(e.Term))
			info.BaseOffset = next
			if len(b) >= directWrite {
				if len(buf) > 0 {
					parts, buf = append(parts, buf), buf[len(buf):]
				}
				parts = append(parts, b)
			} else {
				buf = append(buf, b...)
			}
			meta[i] = entryInfo{typ: entryBatch, size: len(b), baseOffset: next, nextOffset: info.NextOffset(), maxTS: info.MaxTimestamp}
		} else {
			start := len(buf)
			buf = appendRaftEntry(buf, next, e.Kind, e.Term, e.Data)
			meta[i] = entryInfo{typ: entryRaft, size: len(buf) - start, baseOffset: next, nextOffset: next}
		}
		next = meta[i].nextOffset
	}
	if len(buf) > 0 {
		parts = append(parts, buf)
	}
	seq, err := l.writeLocked(meta, parts...)
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
func (l *Log) writeLocked(meta []entryInfo, bufs ...[]byte) (uint64, error) {
	s := l.active
	pos := s.size
	n := 0
	for _, b := range bufs {
		if _, err := s.h.f.WriteAt(b, pos+int64(n)); err != nil {
			if terr := s.h.f.Truncate(pos); terr != nil {
				l.repairAt = pos
			}
			return 0, fmt.Errorf("log: append to %s at position %d: %w", s.path(), pos+int64(n), err)
		}
		n += len(b)
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
	l.written = position{seq: l.written.seq + uint64(n), next: s.next, nextIndex: s.nextIndex()}
	l.countWritten(n)
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

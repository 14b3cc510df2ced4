package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// LogStore is a partition's segment log as Raft's log store
// (raft.LogStore, raft.MonotonicLogStore): Raft entries are the log's
// entries, so every record is written to disk once. The mapping is in the
// package comment.
type LogStore struct {
	log *log.Log

	// mu orders StoreLogs and DeleteRange: StoreLogs computes offsets from
	// the log's next offset.
	mu sync.Mutex
	// applied returns Raft's applied index; nil until the group's Raft is
	// running (SetAppliedIndex).
	applied atomic.Pointer[func() uint64]
	// restored is set by the state machine when a snapshot is restored
	// while Raft runs: Raft's next DeleteRange removes every entry.
	restored atomic.Bool
	// snapshotHW is the high watermark of the last snapshot restored, -1
	// for none: the offset the leader gave the first record after it.
	snapshotHW atomic.Int64
	// snapshotIndex and snapshotTerm are the Raft index and term of the
	// last snapshot restored (0: none, or unknown).
	snapshotIndex atomic.Uint64
	snapshotTerm  atomic.Uint64

	// stored holds the waiters of acks=leader appends, by the address of
	// their batch: on the leader, Raft hands StoreLogs the very slice given
	// to Apply, so its first byte identifies the append.
	waitMu sync.Mutex
	stored map[*byte]chan storedResult

	// cut is set when Raft removed a conflicting suffix and no StoreLogs
	// has succeeded since (guarded by mu); onStale is called (once, in its
	// own goroutine) when a StoreLogs then fails: see SetOnStale.
	cut       bool
	onStale   func()
	staleOnce sync.Once

	// onMarker, when set, is called (under mu: it must not block) after a
	// StoreLogs whose last entry is a sleep marker (sleep.go).
	onMarker func(index uint64)
	// lastStore is when a StoreLogs last succeeded (Unix nanoseconds).
	lastStore atomic.Int64

	// started holds the batches started on this leader (Replica.Start),
	// checked, and the entry each must follow, by the address of their
	// batch.
	startedMu sync.Mutex
	started   map[*byte]*startedEntry

	// cache holds the entries stored last (entrycache.go); nil: none.
	cache *storeCache
}

// startedEntry is a batch started on this leader (Replica.Start), checked
// there. Raft may refuse an entry and then take a later one in the same
// term (a leadership transfer that failed): StoreLogs refuses an entry
// whose predecessor of the same caller was not stored, which would
// otherwise land after a gap in a producer's sequence.
type startedEntry struct {
	store   *LogStore
	checked batch.Checked
	after   *startedEntry // guarded by LogStore.startedMu; nil once settled
	stored  atomic.Bool
}

type storedResult struct {
	r   ApplyResult
	err error
}

var (
	_ raft.LogStore          = (*LogStore)(nil)
	_ raft.MonotonicLogStore = (*LogStore)(nil)
)

// NewLogStore returns the log store over l. The log must be opened with
// Options.ManualHighWatermark: the state machine moves the high watermark.
func NewLogStore(l *log.Log) *LogStore {
	s := &LogStore{log: l}
	s.snapshotHW.Store(-1)
	return s
}

// SetAppliedIndex gives the store Raft's applied index (raft.Raft's
// AppliedIndex), which tells DeleteRange's uses apart. A restore seen while
// Raft started (not followed by a removal of the log) stays marked until
// the next applied entry: clearing it here could clear an install that
// raced in just after Raft's goroutines started.
func (s *LogStore) SetAppliedIndex(fn func() uint64) {
	s.applied.Store(&fn)
}

// IsMonotonic reports true: the log cannot hold a gap in Raft indexes.
func (s *LogStore) IsMonotonic() bool { return true }

// FirstIndex is the first stored Raft index, 0 when empty.
func (s *LogStore) FirstIndex() (uint64, error) { return s.log.FirstIndex(), nil }

// LastIndex is the last stored Raft index, 0 when empty.
func (s *LogStore) LastIndex() (uint64, error) { return s.log.LastIndex(), nil }

// useCache makes the store keep the entries it stores last in c, for
// GetLog. Call it before the store is used.
func (s *LogStore) useCache(c *entryCache) { s.cache = c.store() }

// GetLog reads the entry at index into out, or returns raft.ErrLogNotFound:
// from the cache when it holds the entry and the log still does (retention
// may have trimmed it), else from the log.
func (s *LogStore) GetLog(index uint64, out *raft.Log) error {
	if l, ok := s.cache.get(index); ok && index >= s.log.FirstIndex() {
		*out = l
		return nil
	}
	e, err := s.log.Entry(index)
	if errors.Is(err, log.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("replication: get log %d: %w", index, err)
	}
	*out = raft.Log{Index: e.Index, Term: e.Term, Type: logType(e.Kind), Data: e.Data}
	return nil
}

// StoreLog stores one entry.
func (s *LogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, durable on return. A batch entry started on
// this leader (Replica.Start) comes with the batch.Checked its Start was
// given and is not checked again; any other (a follower's, received from
// the leader) is checked here, once: its frame and CRC (batch.CheckFrame;
// its records were validated by the leader that started it). The log
// assigns each batch its base offset and leader epoch (the term), written
// in place, so the caller's copy (the leader's state machine applies it
// from memory) carries the offsets the log assigned, and checks that the
// indexes follow on (log.AppendEntries).
func (s *LogStore) StoreLogs(ls []*raft.Log) error {
	if len(ls) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.storeLogs(ls)
	s.afterStore(err)
	if err == nil {
		s.cache.put(ls)
		s.lastStore.Store(time.Now().UnixNano())
	}
	if last := ls[len(ls)-1]; err == nil && s.onMarker != nil && last.Type == raft.LogCommand && isSleep(last.Data) {
		s.onMarker(last.Index)
	}
	return err
}

func (s *LogStore) storeLogs(ls []*raft.Log) error {
	if s.log.LastIndex() == 0 && ls[0].Index > 1 {
		// An empty log takes any first index: the entries follow a
		// snapshot, and their offsets must follow the snapshot's.
		if next, hw := s.log.NextOffset(), s.snapshotHW.Load(); hw != next {
			return fmt.Errorf("%w: index %d would get offset %d, the snapshot before it ends at offset %d", ErrOffsetGap, ls[0].Index, next, hw)
		}
	}
	es := make([]log.Entry, len(ls))
	for i, l := range ls {
		es[i] = log.Entry{Index: l.Index, Term: l.Term, Kind: entryKind(l)}
		if es[i].Kind != log.KindBatch {
			es[i].Data = l.Data
		}
	}
	mine, err := s.claim(ls, es)
	if err != nil {
		return err
	}
	for i, l := range ls {
		if es[i].Kind != log.KindBatch || len(es[i].Batch.Bytes()) != 0 {
			continue
		}
		if es[i].Batch, err = batch.CheckFrame(l.Data); err != nil {
			return fmt.Errorf("%w: index %d: %w", ErrNotBatch, l.Index, err)
		}
	}
	err = s.log.AppendEntries(es)
	if err != nil {
		err = fmt.Errorf("replication: store logs %d..%d: %w", ls[0].Index, ls[len(ls)-1].Index, err)
	}
	for _, e := range mine {
		e.stored.Store(err == nil)
	}
	s.notifyStored(ls, err)
	return err
}

// startEntry registers c (an Apply's command) as started on this leader:
// StoreLogs takes its batch as checked, and refuses it unless after's
// entry (nil: none) was stored first. The entry's settle must be called
// once its outcome is known.
func (s *LogStore) startEntry(c batch.Checked, after *startedEntry) *startedEntry {
	e := &startedEntry{store: s, checked: c, after: after}
	s.startedMu.Lock()
	if s.started == nil {
		s.started = map[*byte]*startedEntry{}
	}
	s.started[e.key()] = e
	s.startedMu.Unlock()
	return e
}

// key is the address of the entry's first byte: on the leader, Raft hands
// StoreLogs the very slice given to Apply.
func (e *startedEntry) key() *byte { return &e.checked.Bytes()[0] }

// settle forgets the entry, whose outcome is known.
func (e *startedEntry) settle() {
	s := e.store
	s.startedMu.Lock()
	delete(s.started, e.key())
	e.after = nil // no chain of settled entries
	s.startedMu.Unlock()
}

// claim gives the batch entries of ls started on this leader their
// checked batch (es[i].Batch) and returns them, or ErrOutOfOrder when one
// of them follows an entry that was not stored before it.
func (s *LogStore) claim(ls []*raft.Log, es []log.Entry) ([]*startedEntry, error) {
	s.startedMu.Lock()
	defer s.startedMu.Unlock()
	if len(s.started) == 0 {
		return nil, nil
	}
	var mine []*startedEntry
	for i, l := range ls {
		if es[i].Kind != log.KindBatch || len(l.Data) == 0 {
			continue
		}
		e, ok := s.started[&l.Data[0]]
		if !ok || len(e.checked.Bytes()) != len(l.Data) {
			continue
		}
		if a := e.after; a != nil && !a.stored.Load() && !slices.Contains(mine, a) {
			return nil, fmt.Errorf("%w: index %d follows an entry Raft did not store", ErrOutOfOrder, l.Index)
		}
		mine = append(mine, e)
		es[i].Batch = e.checked
	}
	return mine, nil
}

// awaitStored registers b (an Apply's command) and returns the channel
// that receives its offsets once the leader's log has stored it durably.
// forgetStored must be called once the append has ended.
func (s *LogStore) awaitStored(b []byte) chan storedResult {
	c := make(chan storedResult, 1)
	s.waitMu.Lock()
	if s.stored == nil {
		s.stored = map[*byte]chan storedResult{}
	}
	s.stored[&b[0]] = c
	s.waitMu.Unlock()
	return c
}

// forgetStored drops awaitStored's registration of b, c, if it was not
// answered.
func (s *LogStore) forgetStored(b []byte, c chan storedResult) {
	s.waitMu.Lock()
	if s.stored[&b[0]] == c {
		delete(s.stored, &b[0])
	}
	s.waitMu.Unlock()
}

func (s *LogStore) notifyStored(ls []*raft.Log, err error) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	if len(s.stored) == 0 {
		return
	}
	for _, l := range ls {
		if l.Type != raft.LogCommand || len(l.Data) == 0 {
			continue
		}
		c, ok := s.stored[&l.Data[0]]
		if !ok {
			continue
		}
		delete(s.stored, &l.Data[0])
		res := storedResult{err: err}
		if err == nil {
			info, perr := batch.ParseHeader(l.Data)
			res = storedResult{r: ApplyResult{BaseOffset: info.BaseOffset, LastOffset: info.LastOffset()}, err: perr}
		}
		c <- res
	}
}

// DeleteRange deletes [min, max], serving Raft's three uses:
//
//   - a snapshot was restored (FSM.Restore) and Raft removes every entry:
//     a log that ends exactly at the snapshot (its entry, index and term,
//     and offset: it was just caught up by segment copy) is kept, Raft
//     appends after it;
//     otherwise the log is emptied (it then accepts any first index), but
//     only when its offsets then continue where the snapshot's end; else
//     it is kept and ErrOffsetGap returned (the replica stays behind,
//     safely);
//   - min is above the applied index: a conflicting, uncommitted suffix is
//     truncated (max must reach the last index);
//   - max is at or below the applied index: compaction after a snapshot,
//     a no-op, since retention owns the deletion of records.
func (s *LogStore) DeleteRange(min, max uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := s.log.FirstIndex(), s.log.LastIndex()
	if last == 0 || min > last || max < first || min > max {
		return nil
	}
	if s.restored.Load() && min <= first && max >= last {
		s.restored.Store(false)
		if s.endsAt(s.snapshotHW.Load(), s.snapshotIndex.Load(), s.snapshotTerm.Load()) {
			return nil
		}
		// Emptied, the log's next offset falls back to its start offset.
		if start, hw := s.log.BaseOffset(), s.snapshotHW.Load(); start != hw {
			return fmt.Errorf("%w: emptied, the log would restart at offset %d, the snapshot ends at %d; keeping it", ErrOffsetGap, start, hw)
		}
		return s.truncate(first)
	}
	fn := s.applied.Load()
	if fn == nil {
		// Before Raft runs: by shape. A compaction keeps TrailingLogs >= 1
		// entries, so it never reaches the last index.
		if min <= first && max < last {
			return nil
		}
		return s.truncate(min)
	}
	applied := (*fn)()
	switch {
	case min > applied:
		if max < last {
			return fmt.Errorf("%w: [%d, %d] above the applied index %d stops short of the last index %d", ErrDeleteRange, min, max, applied, last)
		}
		if err := s.truncate(min); err != nil {
			return err
		}
		s.cut = true
		return nil
	case max <= applied:
		return nil
	}
	return fmt.Errorf("%w: [%d, %d] spans the applied index %d", ErrDeleteRange, min, max, applied)
}

// SetOnStale sets what is called when Raft's idea of the last entry is
// wrong: hashicorp/raft (v1.8.0, a TODO in appendEntries) removes a
// conflicting suffix, then stores the leader's entries, and when that
// store fails it keeps its cached last index, the one from before the
// removal. Every later append from the leader then asks for an entry in
// the removed range, gets "log not found", and fails: the replica never
// takes an entry again, and a leadership transfer to it never ends (as
// when a follower's disk is full as it removes a suffix). Only a
// Raft started again reads the last index from the store, so the callback
// restarts the replica's Raft. It is called once, in its own goroutine.
func (s *LogStore) SetOnStale(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onStale = fn
}

// afterStore notes a StoreLogs outcome (under mu): a failure after a
// suffix was removed leaves Raft's cached last index stale.
func (s *LogStore) afterStore(err error) {
	if err == nil {
		s.cut = false
		return
	}
	if s.cut && s.onStale != nil {
		fn := s.onStale
		s.staleOnce.Do(func() { go fn() })
	}
}

func (s *LogStore) truncate(from uint64) error {
	// Forgotten first: a failed truncation may have removed some entries.
	s.cache.truncateFrom(from)
	if err := s.log.TruncateIndexFrom(from); err != nil {
		return fmt.Errorf("replication: truncate log from index %d: %w", from, err)
	}
	return nil
}

// running reports whether Raft runs (SetAppliedIndex was called): a
// snapshot restored then was installed by the leader, not loaded at start.
func (s *LogStore) running() bool { return s.applied.Load() != nil }

// fits reports whether the log can continue at the snapshot whose high
// watermark is hw and Raft index and term index and term (0: unknown) once
// Raft removes its entries: a log ending exactly at the snapshot is kept
// (DeleteRange); emptied, a log restarts at its oldest segment's base
// offset.
func (s *LogStore) fits(hw int64, index, term uint64) bool {
	if s.log.LastIndex() == 0 {
		return s.log.NextOffset() == hw
	}
	return s.endsAt(hw, index, term) || s.log.BaseOffset() == hw
}

// endsAt reports whether the log ends exactly at the snapshot whose high
// watermark is hw and Raft index and term index and term: its last entry
// is the snapshot's last one and its offsets continue at hw. The term
// tells an entry of the leader's log from one a deposed leader left at the
// same index (an uncommitted suffix as long, in entries and records, as
// the leader's): Raft keeps a log at a snapshot only when its entry there
// has the snapshot's index and term (Log Matching: the entries before it
// are then the leader's too). An entry compacted away counts as the
// snapshot's: the cleaner rewrites only entries a snapshot covers, here or
// on the leader a segment copy took them from, so it was committed.
func (s *LogStore) endsAt(hw int64, index, term uint64) bool {
	if index == 0 || s.log.LastIndex() != index || s.log.NextOffset() != hw {
		return false
	}
	e, err := s.log.Entry(index)
	if errors.Is(err, log.ErrNotFound) {
		return true
	}
	return err == nil && e.Term == term
}

// snapshotRestored is called by the state machine when Raft restores it
// from a snapshot whose high watermark is hw and Raft index and term index
// and term.
func (s *LogStore) snapshotRestored(hw int64, index, term uint64) {
	// A segment copy may have replaced the log's entries.
	s.cache.drop()
	s.snapshotHW.Store(hw)
	s.snapshotIndex.Store(index)
	s.snapshotTerm.Store(term)
	s.restored.Store(true)
}

// applying is called by the state machine for every applied entry: a
// restore not followed by the removal of the log is over.
func (s *LogStore) applying() {
	if s.restored.Load() {
		s.restored.Store(false)
	}
}

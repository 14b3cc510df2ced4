package replication

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// testBatch encodes n records keyed key whose values name them.
func testBatch(key string, n int, tag string) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte(key), Value: fmt.Appendf(nil, "%s/%d", tag, i)}
	}
	return batch.Encode(nil, 0, batch.NoProducer, recs)
}

func openLog(t *testing.T, dir string) *log.Log {
	t.Helper()
	l, err := log.Open(dir, log.Options{ManualHighWatermark: true, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// entries returns Raft entries first.. of the given types, commands holding
// 2-record batches.
func entries(first, term uint64, types ...raft.LogType) []*raft.Log {
	out := make([]*raft.Log, len(types))
	for i, typ := range types {
		idx := first + uint64(i)
		e := &raft.Log{Index: idx, Term: term, Type: typ}
		switch typ {
		case raft.LogCommand:
			e.Data = testBatch("k", 2, fmt.Sprintf("i%d.t%d", idx, term))
		case raft.LogConfiguration:
			e.Data = raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "127.0.0.1:1"}}})
		}
		out[i] = e
	}
	return out
}

// checkStore checks every stored entry against want (index, term, type,
// data) and that batch offsets are contiguous from 0, returning the next
// offset.
func checkStore(t *testing.T, s *LogStore, want []*raft.Log) int64 {
	t.Helper()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if len(want) == 0 {
		if first != 0 || last != 0 {
			t.Fatalf("empty store: first %d last %d", first, last)
		}
		return 0
	}
	if first != want[0].Index || last != want[len(want)-1].Index {
		t.Fatalf("first %d last %d, want %d %d", first, last, want[0].Index, want[len(want)-1].Index)
	}
	var next int64
	for _, w := range want {
		var got raft.Log
		if err := s.GetLog(w.Index, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", w.Index, err)
		}
		if got.Index != w.Index || got.Term != w.Term || got.Type != w.Type {
			t.Fatalf("GetLog(%d) = index %d term %d type %v, want %d %d %v", w.Index, got.Index, got.Term, got.Type, w.Index, w.Term, w.Type)
		}
		if !bytes.Equal(got.Data, w.Data) {
			t.Fatalf("GetLog(%d): data differs from what was stored (after the in-place offset rewrite)", w.Index)
		}
		if w.Type == raft.LogCommand {
			info, err := batch.Verify(got.Data)
			if err != nil {
				t.Fatalf("GetLog(%d): %v", w.Index, err)
			}
			if info.BaseOffset != next || info.LeaderEpoch != int32(w.Term) {
				t.Fatalf("GetLog(%d): base offset %d epoch %d, want %d %d", w.Index, info.BaseOffset, info.LeaderEpoch, next, w.Term)
			}
			next = info.NextOffset()
		}
	}
	return next
}

func TestLogStoreRoundTripAndReopen(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	s := NewLogStore(l)
	checkStore(t, s, nil)
	want := entries(1, 1, raft.LogConfiguration, raft.LogNoop, raft.LogCommand, raft.LogCommand, raft.LogBarrier, raft.LogCommand)
	if err := s.StoreLogs(want[:2]); err != nil {
		t.Fatal(err)
	}
	for _, e := range want[2:] {
		if err := s.StoreLog(e); err != nil {
			t.Fatal(err)
		}
	}
	// Enough to roll a few 4 KiB segments (the log rolls between appends).
	more := entries(7, 2, raft.LogNoop)
	for i := 0; i < 60; i++ {
		more = append(more, entries(uint64(8+i), 2, raft.LogCommand)...)
	}
	for i := 0; i < len(more); i += 5 {
		if err := s.StoreLogs(more[i:min(i+5, len(more))]); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, more...)
	if next := checkStore(t, s, want); next != 2*int64(3+60) || l.NextOffset() != next {
		t.Fatalf("next offset %d (log says %d), want %d: offsets must skip non-batch entries", next, l.NextOffset(), 2*(3+60))
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	var e raft.Log
	if err := s.GetLog(1000, &e); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog past the end: %v, want raft.ErrLogNotFound", err)
	}
	if err := s.GetLog(0, &e); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(0): %v, want raft.ErrLogNotFound", err)
	}

	l.Close()
	l = openLog(t, dir)
	defer l.Close()
	checkStore(t, NewLogStore(l), want)
}

func TestLogStoreRejectsCommandThatIsNotABatch(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	err := s.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("set x=1")}})
	if !errors.Is(err, ErrNotBatch) {
		t.Fatalf("got %v, want ErrNotBatch", err)
	}
	if last, _ := s.LastIndex(); last != 0 {
		t.Fatalf("last index %d after a rejected append", last)
	}
}

func applied(i uint64) func() uint64 { return func() uint64 { return i } }

// Raft drops a conflicting uncommitted suffix: the tail is truncated and the
// new leader's entries take the same indexes and the next offsets.
func TestDeleteRangeTruncatesConflictingSuffix(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	s.SetAppliedIndex(applied(3))
	old := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand, raft.LogCommand, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(old); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(4, 6); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, old[:3])
	if l.NextOffset() != 4 {
		t.Fatalf("next offset %d after truncation, want 4", l.NextOffset())
	}
	repl := entries(4, 2, raft.LogNoop, raft.LogCommand)
	if err := s.StoreLogs(repl); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, append(old[:3:3], repl...))

	// A suffix truncation must reach the last index.
	if err := s.DeleteRange(4, 4); !errors.Is(err, ErrDeleteRange) {
		t.Fatalf("partial suffix delete: %v, want ErrDeleteRange", err)
	}
	// A range across the applied index is neither use.
	if err := s.DeleteRange(2, 5); !errors.Is(err, ErrDeleteRange) {
		t.Fatalf("range across the applied index: %v, want ErrDeleteRange", err)
	}
}

// Compaction after a snapshot deletes nothing: retention owns deletion.
func TestDeleteRangeHeadCompactionIsNoop(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	want := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	// Before Raft runs, told apart by shape alone.
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, want)
	s.SetAppliedIndex(applied(5))
	for _, r := range [][2]uint64{{1, 4}, {1, 5}, {0, 2}} {
		if err := s.DeleteRange(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		checkStore(t, s, want)
	}
}

// After a snapshot is restored (installed from the leader), Raft deletes
// every entry and stores from the snapshot index + 1: allowed when the
// emptied log's offsets continue where the snapshot's end.
func TestDeleteRangeAfterSnapshotRestore(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	s.SetAppliedIndex(applied(0))
	// Entries that own no offset: emptied, the log restarts at offset 0.
	if err := s.StoreLogs(entries(1, 1, raft.LogConfiguration, raft.LogNoop)); err != nil {
		t.Fatal(err)
	}
	fsm := NewPartitionFSM(l, s)
	if err := restoreFrom(fsm, PartitionSnapshot{Version: 1, HighWatermark: 0, LastIndex: 0}); err != nil {
		t.Fatal(err)
	}
	s.SetAppliedIndex(applied(100))
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, nil)
	after := entries(101, 3, raft.LogCommand, raft.LogNoop, raft.LogCommand)
	if err := s.StoreLogs(after); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, after)
}

// A snapshot whose high watermark is not where the emptied log would
// restart: the leader's install is refused, and the log is kept and nothing
// renumbered.
func TestSnapshotRestoreRefusesOffsetGap(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	s.SetAppliedIndex(applied(0))
	kept := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(kept); err != nil {
		t.Fatal(err)
	}
	fsm := NewPartitionFSM(l, s)
	fsm.Apply(kept[1])
	gap := PartitionSnapshot{Version: 1, HighWatermark: 500, LastIndex: 99, LastTerm: 3}
	if err := restoreFrom(fsm, gap); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("install of a snapshot ending at offset 500: %v, want ErrOffsetGap", err)
	}
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after a refused install, want 2", hw)
	}

	// Had the install been accepted, Raft's removal of the log is refused too.
	s.SetAppliedIndex(applied(100))
	s.snapshotRestored(500, 0, 0)
	if err := s.DeleteRange(1, 3); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("DeleteRange after restoring a snapshot ending at offset 500: %v, want ErrOffsetGap", err)
	}
	checkStore(t, s, kept)
	if err := s.StoreLogs(entries(101, 3, raft.LogCommand)); err == nil {
		t.Fatal("StoreLogs with a gap in indexes succeeded")
	}

	// An empty log (a new replica) takes entries after a snapshot only at
	// the snapshot's offsets.
	l2 := openLog(t, t.TempDir())
	defer l2.Close()
	s2 := NewLogStore(l2)
	if err := s2.StoreLogs(entries(101, 3, raft.LogCommand)); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("empty log, no snapshot, index 101: %v, want ErrOffsetGap", err)
	}
	s2.SetAppliedIndex(applied(0))
	if err := restoreFrom(NewPartitionFSM(l2, s2), PartitionSnapshot{Version: 1, HighWatermark: 500}); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("install on an empty log at offset 0 of a snapshot ending at 500: %v, want ErrOffsetGap", err)
	}
	if err := s2.StoreLogs(entries(101, 3, raft.LogCommand)); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("empty log at offset 0, snapshot ending at 500: %v, want ErrOffsetGap", err)
	}
	if last, _ := s2.LastIndex(); last != 0 {
		t.Fatalf("last index %d after refused appends", last)
	}
}

// A log that ends at the index and offset of a snapshot the leader
// installs is kept only when its entry there is of the snapshot's term:
// one a deposed leader left at the same index, over as many records as
// the leader's, is not the leader's entry, and neither are those before
// it. The install is then refused (ErrOffsetGap; the segment copy repairs
// it when there is one), as is Raft's removal of the log.
func TestSnapshotRestoreKeepsTheLogOnlyAtTheSnapshotsTerm(t *testing.T) {
	for _, c := range []struct {
		name string
		term uint64 // of the snapshot, whose last entry is at index 4
		keep bool
	}{
		{"the entry at the snapshot's index is its own", 2, true},
		{"the entry at the snapshot's index is a deposed leader's", 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := openLog(t, t.TempDir())
			defer l.Close()
			s := NewLogStore(l)
			s.SetAppliedIndex(applied(2))
			// Committed: indexes 1-2 (offsets 0-1). Not committed: 3-4 of
			// term 2 (offsets 2-5), where the leader of term 3 put 3-4
			// with as many records.
			kept := append(entries(1, 1, raft.LogConfiguration, raft.LogCommand), entries(3, 2, raft.LogCommand, raft.LogCommand)...)
			if err := s.StoreLogs(kept); err != nil {
				t.Fatal(err)
			}
			fsm := NewPartitionFSM(l, s)
			fsm.Apply(kept[1])
			fsm.snapshotAt = func() (uint64, uint64) { return 4, c.term }
			snap := PartitionSnapshot{Version: 1, HighWatermark: 6, LastIndex: 4, LastTerm: c.term}
			err := restoreFrom(fsm, snap)
			if c.keep != (err == nil) || !c.keep && !errors.Is(err, ErrOffsetGap) {
				t.Fatalf("install of the snapshot at index 4 term %d: %v", c.term, err)
			}
			// Had the install been accepted, Raft's removal of the log.
			s.SetAppliedIndex(applied(4))
			s.snapshotRestored(6, 4, c.term)
			err = s.DeleteRange(1, 4)
			if c.keep != (err == nil) || !c.keep && !errors.Is(err, ErrOffsetGap) {
				t.Fatalf("DeleteRange after restoring the snapshot at index 4 term %d: %v", c.term, err)
			}
			checkStore(t, s, kept)
		})
	}
}

func TestEntryKindMapping(t *testing.T) {
	for typ := raft.LogCommand; typ <= raft.LogConfiguration; typ++ {
		k := entryKind(&raft.Log{Type: typ, Data: testBatch("k", 1, "t")})
		if (typ == raft.LogCommand) != (k == log.KindBatch) || k == kindCommand {
			t.Fatalf("type %v -> kind %d", typ, k)
		}
		if logType(k) != typ {
			t.Fatalf("type %v -> kind %d -> type %v", typ, k, logType(k))
		}
	}
	cmd := &raft.Log{Type: raft.LogCommand, Data: encodeDeleteRecords(7)}
	if k := entryKind(cmd); k != kindCommand || logType(k) != raft.LogCommand {
		t.Fatalf("delete records command -> kind %d -> type %v", k, logType(k))
	}
	if off, err := decodeDeleteRecords(cmd.Data); err != nil || off != 7 {
		t.Fatalf("decode: %d, %v", off, err)
	}
	for _, bad := range [][]byte{cmd.Data[:20], append(cmd.Data[:17:17], 9, 0, 0, 0, 0, 0, 0, 0, 0), encodeDeleteRecords(-1)} {
		if _, err := decodeDeleteRecords(bad); !errors.Is(err, ErrBadCommand) {
			t.Fatalf("decode %x: %v, want ErrBadCommand", bad, err)
		}
	}
}

// A snapshot restored as Raft starts is followed by no removal of the log:
// once an entry is applied, a DeleteRange covering the whole log is a
// compaction again, not a removal.
func TestStartupRestoreDoesNotArmRemoval(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	es := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	fsm := NewPartitionFSM(l, s)
	// At start (Raft not running yet) the restore is not checked against
	// the log, and it marks a removal as possible.
	if err := restoreFrom(fsm, PartitionSnapshot{Version: 1, HighWatermark: 0}); err != nil {
		t.Fatal(err)
	}
	s.SetAppliedIndex(applied(3))
	fsm.Apply(es[1])
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, es)
}

// An entry started after another that Raft did not store (it refused it,
// then took the next one in the same term) is refused, so that a producer's
// batches never land after a gap; after the predecessor, or in the same
// call behind it, it is stored.
func TestStoreLogsRefusesEntryAfterUnstoredOne(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	es := entries(1, 1, raft.LogCommand, raft.LogCommand, raft.LogCommand, raft.LogCommand)
	a := s.startEntry(validated(t, es[0].Data), nil)
	b := s.startEntry(validated(t, es[1].Data), a)
	c := s.startEntry(validated(t, es[2].Data), b)
	// es[0] refused by Raft: es[1] must not be stored in its place.
	refused := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: es[1].Data}
	if err := s.StoreLogs([]*raft.Log{refused}); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("entry after an unstored one: %v, want ErrOutOfOrder", err)
	}
	if last, _ := s.LastIndex(); last != 0 {
		t.Fatalf("last index %d after a refused StoreLogs", last)
	}
	if err := s.StoreLogs(es[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(es[1:3]); err != nil { // b behind a, c behind b in the same call
		t.Fatal(err)
	}
	a.settle()
	b.settle()
	c.settle()
	if err := s.StoreLogs(es[3:]); err != nil { // not started here: a follower's
		t.Fatal(err)
	}
	checkStore(t, s, es)
}

// hashicorp/raft removes a conflicting suffix, then stores the leader's
// entries; when that store fails it keeps its cached last index from
// before the removal, and every later append asks for a removed entry
// (soak seed 16). The store says so, once, so that the replica's Raft is
// started again; a failed store without a removal before it, or after a
// successful one, is an ordinary failure.
func TestStoreFailureAfterSuffixRemovalReportsStaleRaft(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	s.SetAppliedIndex(applied(2))
	stale := make(chan struct{}, 4)
	s.SetOnStale(func() { stale <- struct{}{} })
	if err := s.StoreLogs(entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	bad := &raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("not a batch")}
	// A failure with no removal before it.
	if err := s.StoreLogs([]*raft.Log{{Index: 5, Term: 1, Type: raft.LogCommand, Data: []byte("x")}}); err == nil {
		t.Fatal("a command that is not a batch was stored")
	}
	// A removal, then a store that succeeds, then one that fails.
	if err := s.DeleteRange(4, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(4, 2, raft.LogNoop)); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 5, Term: 2, Type: raft.LogCommand, Data: []byte("x")}}); err == nil {
		t.Fatal("a command that is not a batch was stored")
	}
	select {
	case <-stale:
		t.Fatal("stale reported without a failed store right after a removal")
	case <-time.After(100 * time.Millisecond):
	}
	// The seed-16 sequence: a removal, then the leader's entries fail.
	if err := s.DeleteRange(3, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{bad}); err == nil {
		t.Fatal("a command that is not a batch was stored")
	}
	if err := s.StoreLogs([]*raft.Log{bad}); err == nil {
		t.Fatal("a command that is not a batch was stored")
	}
	select {
	case <-stale:
	case <-time.After(5 * time.Second):
		t.Fatal("a store failed after a suffix removal and nothing said Raft's last index is stale")
	}
	select {
	case <-stale:
		t.Fatal("stale reported twice")
	case <-time.After(100 * time.Millisecond):
	}
}

// validated is batch.Validate of b, which must pass.
func validated(t testing.TB, b []byte) batch.Checked {
	t.Helper()
	c, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

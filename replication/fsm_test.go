package replication

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
)

func restoreFrom(f *PartitionFSM, s PartitionSnapshot) error {
	b, _ := json.Marshal(s)
	return f.Restore(io.NopCloser(bytes.NewReader(b)))
}

func TestPartitionFSMApplyMovesHighWatermark(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	f := NewPartitionFSM(l, s)
	es := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogNoop, raft.LogCommand)
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any apply, want 0 (ManualHighWatermark)", hw)
	}
	// The leader applies its in-memory entries: the store wrote the offsets
	// into them.
	r := f.Apply(es[1])
	if r != (ApplyResult{BaseOffset: 0, LastOffset: 1}) {
		t.Fatalf("apply: %+v", r)
	}
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d, want 2", hw)
	}
	// A follower applies entries read back from the log.
	var e raft.Log
	if err := s.GetLog(4, &e); err != nil {
		t.Fatal(err)
	}
	if r := f.Apply(&e); r != (ApplyResult{BaseOffset: 2, LastOffset: 3}) {
		t.Fatalf("apply: %+v", r)
	}
	// Applying again (after a restart) never moves it back.
	f.Apply(es[1])
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after re-apply, want 4", hw)
	}
	if err, ok := f.Apply(&raft.Log{Index: 9, Data: []byte("nope")}).(error); !ok || !errors.Is(err, ErrNotBatch) {
		t.Fatalf("apply of a non-batch: %v", err)
	}
}

func TestPartitionSnapshotRoundTrip(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	f := NewPartitionFSM(l, s)
	es := entries(1, 4, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	f.Apply(es[0])
	f.Apply(es[1])

	store := raft.NewInmemSnapshotStore()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink, err := store.Create(raft.SnapshotVersionMax, 2, 4, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	metas, _ := store.List()
	_, rc, err := store.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	var got PartitionSnapshot
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := PartitionSnapshot{Version: 1, LogStartOffset: 0, HighWatermark: 4, LastIndex: 2, LastTerm: 4}
	if got != want {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
	if len(raw) > 200 {
		t.Fatalf("snapshot of %d bytes: it must hold metadata only", len(raw))
	}

	// Restore on a reopened replica whose high watermark starts at the log
	// start.
	l2 := openLog(t, t.TempDir())
	defer l2.Close()
	s2 := NewLogStore(l2)
	if err := s2.StoreLogs(entries(1, 4, raft.LogCommand, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	f2 := NewPartitionFSM(l2, s2)
	if err := f2.Restore(io.NopCloser(bytes.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	if hw := l2.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after restore, want 4", hw)
	}
	if err := restoreFrom(f2, PartitionSnapshot{Version: 9}); err == nil {
		t.Fatal("restore of an unknown version succeeded")
	}
}

// A replica's Raft started again on the log it kept serving restores its
// last snapshot, older than what it applied: readers must not see the
// high watermark move back to it.
func TestPartitionFSMRestoreNeverLowersHighWatermark(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	f := NewPartitionFSM(l, s)
	es := entries(1, 4, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	f.Apply(es[0])
	old, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(es[1])
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d, want 4", hw)
	}
	// The Raft of the same log starts again: a new store and state
	// machine, and the snapshot taken after the first entry.
	f2 := NewPartitionFSM(l, NewLogStore(l))
	if err := restoreFrom(f2, old.(*fsmSnapshot).s.PartitionSnapshot); err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after restoring an older snapshot on a live log, want 4", hw)
	}
	// Entries applied again change nothing.
	f2.Apply(es[1])
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after re-apply, want 4", hw)
	}
}

package replication

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
)

func TestShareStateCommandRoundTrip(t *testing.T) {
	b := encodeShareState("g1", []byte{1, 2, 3})
	if !isCommand(b) || !isShareState(b) || isSleep(b) {
		t.Fatalf("%x is not told as a share state command", b)
	}
	if _, err := decodeDeleteRecords(b); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("decoded as delete records: %v", err)
	}
	g, s, err := decodeShareState(b)
	if err != nil || g != "g1" || !bytes.Equal(s, []byte{1, 2, 3}) {
		t.Fatalf("decode: %q %x %v", g, s, err)
	}
	for _, bad := range [][]byte{b[:19], b[:21], encodeShareState("", nil), encodeDeleteRecords(5)} {
		if _, _, err := decodeShareState(bad); !errors.Is(err, ErrBadCommand) {
			t.Fatalf("decode of %x: %v, want ErrBadCommand", bad, err)
		}
	}
}

// Share state entries apply into the state machine (the last per group
// wins, offsets untouched), travel in its snapshot, and a restore
// replaces what was applied with the snapshot's.
func TestShareStateApplySnapshotRestore(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	f := NewPartitionFSM(l, s)
	es := entries(1, 1, raft.LogCommand)
	es = append(es,
		&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: encodeShareState("a", []byte("a1"))},
		&raft.Log{Index: 3, Term: 1, Type: raft.LogCommand, Data: encodeShareState("b", []byte("b1"))},
		&raft.Log{Index: 4, Term: 1, Type: raft.LogCommand, Data: encodeShareState("a", []byte("a2"))})
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		r := f.Apply(e)
		if i > 0 && r != e.Index {
			t.Fatalf("apply of entry %d: %v, want its index", e.Index, r)
		}
	}
	if hw, next := l.HighWatermark(), l.NextOffset(); hw != 2 || next != 2 {
		t.Fatalf("high watermark %d, next offset %d: share states own no offset", hw, next)
	}
	want := map[string]ShareState{"a": {Index: 4, State: []byte("a2")}, "b": {Index: 3, State: []byte("b1")}}
	checkShares(t, f, want)
	if r, ok := f.Apply(&raft.Log{Index: 5, Type: raft.LogCommand, Data: encodeShareState("", nil)}).(error); !ok || !errors.Is(r, ErrBadCommand) {
		t.Fatalf("apply of a bad share state: %v", r)
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, 4, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	// Applied after the snapshot: a restore of it forgets this.
	f.Apply(&raft.Log{Index: 6, Term: 1, Type: raft.LogCommand, Data: encodeShareState("c", []byte("c1"))})
	metas, _ := store.List()
	_, rc, err := store.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	for _, g := range []*PartitionFSM{f, NewPartitionFSM(l, NewLogStore(l))} {
		if err := g.Restore(io.NopCloser(bytes.NewReader(raw))); err != nil {
			t.Fatal(err)
		}
		checkShares(t, g, want)
	}
	// A snapshot of a partition no share group used restores none.
	if err := restoreFrom(f, PartitionSnapshot{Version: 1, HighWatermark: 2}); err != nil {
		t.Fatal(err)
	}
	checkShares(t, f, map[string]ShareState{})
}

func checkShares(t *testing.T, f *PartitionFSM, want map[string]ShareState) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.shares) != len(want) {
		t.Fatalf("share states %v, want %v", f.shares, want)
	}
	for g, w := range want {
		if got := f.shares[g]; got.Index != w.Index || !bytes.Equal(got.State, w.State) {
			t.Fatalf("share state of %q: %+v, want %+v", g, got, w)
		}
	}
}

package replication

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// cachedStore is a log store over a fresh log using a cache of max bytes.
func cachedStore(t *testing.T, c *entryCache) *LogStore {
	t.Helper()
	l := openLog(t, t.TempDir())
	t.Cleanup(func() { l.Close() })
	s := NewLogStore(l)
	s.useCache(c)
	return s
}

// sameAsLog checks that every entry of s reads from its cache exactly as
// from the log (a store without a cache over the same log).
func sameAsLog(t *testing.T, s *LogStore) {
	t.Helper()
	disk := NewLogStore(s.log)
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	for i := first; i <= last && last != 0; i++ {
		var got, want raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if err := disk.GetLog(i, &want); err != nil {
			t.Fatalf("GetLog(%d) from the log: %v", i, err)
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("GetLog(%d) = %d/%d/%v %q, the log has %d/%d/%v %q", i, got.Index, got.Term, got.Type, got.Data,
				want.Index, want.Term, want.Type, want.Data)
		}
	}
}

// The cache holds what was stored last, exactly as the log reads it back,
// also after Raft removed a conflicting suffix and stored other entries at
// the same indexes.
func TestEntryCacheServesStoredEntries(t *testing.T) {
	c := newEntryCache(1 << 20)
	s := cachedStore(t, c)
	s.SetAppliedIndex(applied(2))
	old := entries(1, 1, raft.LogConfiguration, raft.LogCommand, raft.LogCommand, raft.LogNoop, raft.LogCommand, raft.LogBarrier)
	if err := s.StoreLogs(old); err != nil {
		t.Fatal(err)
	}
	if c.cachedBytes() == 0 {
		t.Fatal("nothing cached after StoreLogs")
	}
	sameAsLog(t, s)
	// The cached entry is the one given to StoreLogs: no copy, no read.
	var got raft.Log
	if err := s.GetLog(2, &got); err != nil || &got.Data[0] != &old[1].Data[0] {
		t.Fatalf("GetLog(2) (%v) did not come from the cache", err)
	}
	if err := s.DeleteRange(3, 6); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(4, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(4) after the suffix was removed: %v, want raft.ErrLogNotFound", err)
	}
	repl := entries(3, 2, raft.LogCommand, raft.LogCommand)
	if err := s.StoreLogs(repl); err != nil {
		t.Fatal(err)
	}
	sameAsLog(t, s)
	checkStore(t, s, append(old[:2:2], repl...))
}

// The budget is shared by every store of the node and never exceeded; an
// entry that fell out is read from the log.
func TestEntryCacheBudget(t *testing.T) {
	one := len(testBatch("k", 2, "i1.t1")) + cachedEntryOverhead
	c := newEntryCache(int64(5 * one))
	a, b := cachedStore(t, c), cachedStore(t, c)
	for i := uint64(1); i <= 20; i++ {
		for _, s := range []*LogStore{a, b} {
			if err := s.StoreLogs(entries(i, 1, raft.LogCommand)); err != nil {
				t.Fatal(err)
			}
			if n := c.cachedBytes(); n > c.max {
				t.Fatalf("cache holds %d bytes, budget %d", n, c.max)
			}
		}
	}
	if n := c.cachedBytes(); n < c.max-int64(2*one) {
		t.Fatalf("cache holds %d bytes of a budget of %d after 40 entries", n, c.max)
	}
	var got raft.Log
	if _, ok := a.cache.get(1); ok {
		t.Fatal("the oldest entry is still cached")
	}
	if _, ok := b.cache.get(20); !ok {
		t.Fatal("the newest entry is not cached")
	}
	if err := a.GetLog(1, &got); err != nil || got.Index != 1 {
		t.Fatalf("GetLog(1) from the log: %v", err)
	}
	sameAsLog(t, a)
	sameAsLog(t, b)
	a.cache.drop()
	b.cache.drop()
	if n := c.cachedBytes(); n != 0 {
		t.Fatalf("%d bytes cached after both stores dropped theirs", n)
	}
}

// A restored snapshot may come with another log (segment copy): nothing
// cached before it is served after it.
func TestEntryCacheDroppedOnSnapshotRestore(t *testing.T) {
	c := newEntryCache(1 << 20)
	s := cachedStore(t, c)
	if err := s.StoreLogs(entries(1, 1, raft.LogCommand, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	s.snapshotRestored(4, 2, 1)
	if n := c.cachedBytes(); n != 0 {
		t.Fatalf("%d bytes cached after a snapshot restore", n)
	}
}

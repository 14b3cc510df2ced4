package offsets

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var testNow = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func openDB(t *testing.T, dir string, fs vfs.FS) *pebble.DB {
	t.Helper()
	opts := &pebble.Options{FS: fs}
	if fs == nil {
		opts.FS = vfs.Default
	}
	opts.Logger = quietLogger{}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatalf("open pebble: %v", err)
	}
	return db
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func newStore(t *testing.T) (*Store, *pebble.DB) {
	t.Helper()
	db := openDB(t, t.TempDir(), nil)
	t.Cleanup(func() { db.Close() })
	return New(db, Options{Now: func() time.Time { return testNow }}), db
}

func mustCommit(t *testing.T, s *Store, group string, cs ...Committed) {
	t.Helper()
	if err := s.Commit(group, cs); err != nil {
		t.Fatalf("commit %q: %v", group, err)
	}
}

func mustFetch(t *testing.T, s *Store, group, topic string) []Committed {
	t.Helper()
	cs, err := s.Fetch(group, topic)
	if err != nil {
		t.Fatalf("fetch %q %q: %v", group, topic, err)
	}
	return cs
}

func TestCommitFetchRoundTrip(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "billing",
		Committed{Topic: "orders", Partition: 1, Offset: 42, Metadata: "host-a"},
		Committed{Topic: "orders", Partition: 0, Offset: 7},
		Committed{Topic: "audit", Partition: 3, Offset: 0, Metadata: strings.Repeat("m", MaxMetadataBytes)},
	)
	want := []Committed{
		{Topic: "audit", Partition: 3, Offset: 0, Metadata: strings.Repeat("m", MaxMetadataBytes), CommitTime: testNow},
		{Topic: "orders", Partition: 0, Offset: 7, CommitTime: testNow},
		{Topic: "orders", Partition: 1, Offset: 42, Metadata: "host-a", CommitTime: testNow},
	}
	got := mustFetch(t, s, "billing", "")
	if !equalCommitted(got, want) {
		t.Fatalf("fetch all:\n got %+v\nwant %+v", got, want)
	}
	if got := mustFetch(t, s, "billing", "orders"); !equalCommitted(got, want[1:]) {
		t.Fatalf("fetch orders:\n got %+v\nwant %+v", got, want[1:])
	}
	c, ok, err := s.Get("billing", "orders", 1)
	if err != nil || !ok || c.Offset != 42 || c.Metadata != "host-a" || !c.CommitTime.Equal(testNow) {
		t.Fatalf("get orders/1 = %+v, %v, %v", c, ok, err)
	}
	if _, ok, err := s.Get("billing", "orders", 2); ok || err != nil {
		t.Fatalf("get uncommitted partition: ok=%v err=%v", ok, err)
	}
	if got := mustFetch(t, s, "nobody", ""); len(got) != 0 {
		t.Fatalf("fetch of unknown group = %+v, want none", got)
	}
}

func TestCommitUpdatesOnlyNamedPartitions(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 0, Offset: 1}, Committed{Topic: "t", Partition: 1, Offset: 1})
	later := testNow.Add(time.Minute)
	s.now = func() time.Time { return later }
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 1, Offset: 9, Metadata: "m"})
	got := mustFetch(t, s, "g", "t")
	want := []Committed{
		{Topic: "t", Partition: 0, Offset: 1, CommitTime: testNow},
		{Topic: "t", Partition: 1, Offset: 9, Metadata: "m", CommitTime: later},
	}
	if !equalCommitted(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Going backwards is the consumer's choice (a rewind), not an error.
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 1, Offset: 3})
	if c, _, _ := s.Get("g", "t", 1); c.Offset != 3 {
		t.Fatalf("rewound offset = %d, want 3", c.Offset)
	}
}

func TestCommitValidation(t *testing.T) {
	ok := Committed{Topic: "t", Partition: 0, Offset: 0}
	tests := []struct {
		name  string
		group string
		cs    []Committed
		want  string
	}{
		{"empty group", "", []Committed{ok}, "empty consumer group"},
		{"long group", strings.Repeat("g", MaxGroupBytes+1), []Committed{ok}, "at most 255"},
		{"negative offset", "g", []Committed{{Topic: "t", Offset: -1}}, "offset -1"},
		{"negative partition", "g", []Committed{{Topic: "t", Partition: -2}}, "partition -2"},
		{"empty topic", "g", []Committed{{Topic: ""}}, "invalid topic name"},
		{"topic with slash", "g", []Committed{{Topic: "a/b"}}, "invalid topic name"},
		{"topic with nul", "g", []Committed{{Topic: "a\x00b"}}, "invalid topic name"},
		{"big metadata", "g", []Committed{{Topic: "t", Metadata: strings.Repeat("x", MaxMetadataBytes+1)}}, "metadata"},
		{"duplicate", "g", []Committed{ok, {Topic: "t", Offset: 5}}, "appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t)
			err := s.Commit(tt.group, tt.cs)
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidArgument mentioning %q", err, tt.want)
			}
			groups, _ := s.Groups()
			if len(groups) != 0 {
				t.Fatalf("a refused commit stored groups %q", groups)
			}
		})
	}
	s, _ := newStore(t)
	if _, err := s.Fetch("", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("fetch empty group: %v", err)
	}
	if _, err := s.Fetch("g", "bad topic"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("fetch bad topic: %v", err)
	}
	if _, _, err := s.Get("g", "t", -1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("get negative partition: %v", err)
	}
	if err := s.DeleteTopic(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("delete empty topic: %v", err)
	}
}

// A commit with one bad offset stores none of them.
func TestCommitAllOrNothing(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 0, Offset: 1})
	err := s.Commit("g", []Committed{
		{Topic: "t", Partition: 0, Offset: 100},
		{Topic: "t", Partition: 1, Offset: 100},
		{Topic: "t", Partition: 2, Offset: -5},
	})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
	got := mustFetch(t, s, "g", "")
	if len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("after refused commit: %+v, want only t/0 at 1", got)
	}
}

// Readers racing a writer never see part of a multi-offset commit: every
// commit sets all partitions to the same offset, so any snapshot a reader
// gets must hold one value.
func TestCommitAtomicUnderConcurrentReads(t *testing.T) {
	s, _ := newStore(t)
	const parts = 16
	commit := func(off int64) {
		cs := make([]Committed, parts)
		for p := range cs {
			cs[p] = Committed{Topic: "t", Partition: int32(p), Offset: off}
		}
		mustCommit(t, s, "g", cs...)
	}
	commit(0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				cs, err := s.Fetch("g", "t")
				if err != nil {
					t.Errorf("fetch: %v", err)
					return
				}
				if len(cs) != parts {
					t.Errorf("fetch saw %d partitions, want %d", len(cs), parts)
					return
				}
				for _, c := range cs {
					if c.Offset != cs[0].Offset {
						t.Errorf("torn commit: partition %d at %d, partition 0 at %d", c.Partition, c.Offset, cs[0].Offset)
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	for off := int64(1); off <= 200; off++ {
		commit(off)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d consistent reads during 200 commits", reads.Load())
}

func TestOffsetsDurableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, nil)
	s := New(db, Options{Now: func() time.Time { return testNow }})
	mustCommit(t, s, "g1", Committed{Topic: "t", Partition: 0, Offset: 10, Metadata: "x"}, Committed{Topic: "t", Partition: 1, Offset: 20})
	mustCommit(t, s, "g2", Committed{Topic: "u", Partition: 0, Offset: 5})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir, nil)
	defer db.Close()
	s = New(db, Options{})
	want := []Committed{
		{Topic: "t", Partition: 0, Offset: 10, Metadata: "x", CommitTime: testNow},
		{Topic: "t", Partition: 1, Offset: 20, CommitTime: testNow},
	}
	if got := mustFetch(t, s, "g1", ""); !equalCommitted(got, want) {
		t.Fatalf("after reopen: %+v\nwant %+v", got, want)
	}
	if groups, err := s.Groups(); err != nil || !slices.Equal(groups, []string{"g1", "g2"}) {
		t.Fatalf("groups after reopen = %q, %v", groups, err)
	}
}

// A crash right after Commit returns loses nothing: the clone keeps only
// what Pebble synced. The unsynced control write shows the clone really
// drops what was not synced.
func TestOffsetsSurviveCrashAfterCommit(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openDB(t, "meta", fs)
	s := New(db, Options{Now: func() time.Time { return testNow }})
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 0, Offset: 10}, Committed{Topic: "t", Partition: 1, Offset: 11})
	if err := db.Set(offsetKey("control", "t", 0), encodeValue(1, 0, ""), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	db.Close()

	db = openDB(t, "meta", crashed)
	defer db.Close()
	s = New(db, Options{})
	got := mustFetch(t, s, "g", "t")
	if len(got) != 2 || got[0].Offset != 10 || got[1].Offset != 11 {
		t.Fatalf("after crash: %+v, want t/0=10 t/1=11", got)
	}
	if c, ok, _ := s.Get("control", "t", 0); ok {
		t.Fatalf("unsynced control write survived the crash (%+v): the crash clone proves nothing", c)
	}
}

// Names sharing prefixes, separators and NUL bytes land in their own key
// ranges: no group or topic sees another's offsets.
func TestKeyPrefixIsolation(t *testing.T) {
	s, db := newStore(t)
	// Neighbours in the shared DB that are not ours.
	for _, k := range []string{"offsets", "offsets0", "offsetsX/g", "topic/t", "raft/x"} {
		if err := db.Set([]byte(k), []byte("not an offset"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	groups := []string{"a", "a\x00", "a\x00b", "a\x01", "ab", "a/b", "a\xff", "offsets/a", "\x00"}
	topics := []string{"t", "t.x", "t_", "t-", "tt"}
	for gi, g := range groups {
		for ti, tp := range topics {
			mustCommit(t, s, g, Committed{Topic: tp, Partition: int32(ti), Offset: int64(gi*100 + ti)})
		}
	}
	got, err := s.Groups()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(groups)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("groups = %q, want %q", got, want)
	}
	for gi, g := range groups {
		all := mustFetch(t, s, g, "")
		if len(all) != len(topics) {
			t.Fatalf("group %q: %d offsets, want %d: %+v", g, len(all), len(topics), all)
		}
		for ti, tp := range topics {
			cs := mustFetch(t, s, g, tp)
			if len(cs) != 1 || cs[0].Topic != tp || cs[0].Offset != int64(gi*100+ti) {
				t.Fatalf("group %q topic %q: %+v", g, tp, cs)
			}
		}
	}
}

func TestFetchOrdersByTopicThenPartition(t *testing.T) {
	s, _ := newStore(t)
	var cs []Committed
	for _, p := range []int32{300, 2, 1 << 30, 0, 10, 256} {
		cs = append(cs, Committed{Topic: "t", Partition: p}, Committed{Topic: "a", Partition: p})
	}
	mustCommit(t, s, "g", cs...)
	got := mustFetch(t, s, "g", "")
	if !slices.IsSortedFunc(got, func(a, b Committed) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	}) || len(got) != len(cs) {
		t.Fatalf("not sorted by topic then partition: %+v", got)
	}
}

func TestDeleteTopic(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "g1", Committed{Topic: "t", Partition: 0, Offset: 1}, Committed{Topic: "t.x", Partition: 0, Offset: 2})
	mustCommit(t, s, "g2", Committed{Topic: "t", Partition: 3, Offset: 3})
	mustCommit(t, s, "g3", Committed{Topic: "tt", Partition: 0, Offset: 4})
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if got := mustFetch(t, s, "g1", ""); len(got) != 1 || got[0].Topic != "t.x" {
		t.Fatalf("g1 after delete = %+v, want only t.x", got)
	}
	if got := mustFetch(t, s, "g3", ""); len(got) != 1 || got[0].Topic != "tt" {
		t.Fatalf("g3 after delete = %+v, want only tt", got)
	}
	if groups, _ := s.Groups(); !slices.Equal(groups, []string{"g1", "g3"}) {
		t.Fatalf("groups = %q, want g1 g3 (g2 had only t)", groups)
	}
	if err := s.DeleteTopic("missing"); err != nil {
		t.Fatalf("deleting a topic nobody committed: %v", err)
	}
}

func TestDeleteGroup(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "a", Committed{Topic: "t", Offset: 1})
	mustCommit(t, s, "a\x00", Committed{Topic: "t", Offset: 2})
	mustCommit(t, s, "ab", Committed{Topic: "t", Offset: 3})
	if err := s.DeleteGroup("a"); err != nil {
		t.Fatal(err)
	}
	if groups, _ := s.Groups(); !slices.Equal(groups, []string{"a\x00", "ab"}) {
		t.Fatalf("groups = %q", groups)
	}
}

func TestCorruptValueIsAnError(t *testing.T) {
	s, db := newStore(t)
	for name, v := range map[string][]byte{
		"short":       {1, 2, 3},
		"version":     append([]byte{9}, make([]byte, 16)...),
		"negative":    encodeValue(-1, 0, ""),
		"empty value": nil,
	} {
		t.Run(name, func(t *testing.T) {
			if err := db.Set(offsetKey("g", "t", 0), v, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Fetch("g", "t"); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("fetch: %v, want ErrCorrupt", err)
			}
			if _, _, err := s.Get("g", "t", 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("get: %v, want ErrCorrupt", err)
			}
		})
	}
}

func equalCommitted(a, b []Committed) bool {
	return slices.EqualFunc(a, b, func(x, y Committed) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset &&
			x.Metadata == y.Metadata && x.CommitTime.Equal(y.CommitTime)
	})
}

package kv

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/logd/logd/internal/batch"
)

// memLog is a partition's log in memory: whole batches by base offset,
// a log start and a high watermark, read as log.Log reads (from the batch
// holding the offset, or the next one kept past a gap).
type memLog struct {
	batches [][]byte
	start   int64
	next    int64
	reads   []int   // maxBytes of each ReadInto
	offsets []int64 // offset of each ReadInto
}

func (l *memLog) StartOffset() int64   { return l.start }
func (l *memLog) HighWatermark() int64 { return l.next }

func (l *memLog) ReadInto(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	l.reads = append(l.reads, maxBytes)
	l.offsets = append(l.offsets, offset)
	if offset < l.start || offset > l.next {
		return nil, fmt.Errorf("offset %d out of range [%d, %d]", offset, l.start, l.next)
	}
	out := dst[:0]
	for _, b := range l.batches {
		info, _ := batch.ParseHeader(b)
		if info.NextOffset() <= offset || info.BaseOffset < l.start {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

// put appends one batch of records (value nil: a tombstone; key nil: no
// key) and returns its base offset.
func (l *memLog) put(recs ...batch.Record) int64 {
	base := l.next
	for i := range recs {
		recs[i].Timestamp = 1000 + base + int64(i)
	}
	l.batches = append(l.batches, batch.Encode(nil, base, batch.NoProducer, recs))
	l.next += int64(len(recs))
	return base
}

func rec(k, v string) batch.Record {
	r := batch.Record{Key: []byte(k), Value: []byte(v)}
	if v == "<nil>" {
		r.Value = nil
	}
	return r
}

func openDB(t *testing.T) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustGet(t *testing.T, s *Store, p Partition, key string) (Record, bool) {
	t.Helper()
	r, ok, err := s.Get(p, []byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return r, ok
}

func wantValue(t *testing.T, s *Store, p Partition, key, value string, offset int64) {
	t.Helper()
	r, ok := mustGet(t, s, p, key)
	if !ok || string(r.Value) != value || r.Offset != offset {
		t.Fatalf("get %q = %q at %d (found %v), want %q at %d", key, r.Value, r.Offset, ok, value, offset)
	}
}

func wantAbsent(t *testing.T, s *Store, p Partition, key string) {
	t.Helper()
	if r, ok := mustGet(t, s, p, key); ok {
		t.Fatalf("get %q = %q at %d, want absent", key, r.Value, r.Offset)
	}
}

func TestGetNewestValueAndTombstones(t *testing.T) {
	l := &memLog{}
	s := New(openDB(t))
	p := Partition{Topic: "t", ID: 0, Incarnation: 1, Log: l}
	l.put(rec("a", "1"), rec("b", "1"))
	l.put(batch.Record{Value: []byte("keyless")})
	l.put(rec("a", "2"), rec("b", "<nil>"), rec("c", ""))
	wantValue(t, s, p, "a", "2", 3)
	wantAbsent(t, s, p, "b")
	wantValue(t, s, p, "c", "", 5)
	wantAbsent(t, s, p, "zz")
	// Records appended after a get are seen by the next one.
	l.put(rec("b", "3"), rec("a", "<nil>"))
	wantValue(t, s, p, "b", "3", 6)
	wantAbsent(t, s, p, "a")
	if n := s.Rebuilds(); n != 1 {
		t.Fatalf("rebuilds = %d, want 1 (the first use)", n)
	}
}

func TestIndexSurvivesReopen(t *testing.T) {
	db := openDB(t)
	l := &memLog{}
	p := Partition{Topic: "t", ID: 2, Incarnation: 7, Log: l}
	l.put(rec("k", "v1"))
	wantValue(t, New(db), p, "k", "v1", 0)
	l.put(rec("k", "v2"))
	l.offsets = nil
	s := New(db)
	wantValue(t, s, p, "k", "v2", 1)
	// One read to catch up from offset 1, one of the record.
	if s.Rebuilds() != 0 || fmt.Sprint(l.offsets) != "[1 1]" {
		t.Fatalf("reopened store: %d rebuilds, reads at %v; want none and [1 1] (it goes on from where it stopped)", s.Rebuilds(), l.offsets)
	}
}

func TestDamagedIndexIsRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(pp []byte) []byte
		val  []byte
	}{
		{"state", stateKey, []byte{9, 9}},
		{"entry", func(pp []byte) []byte { return entryKey(pp, []byte("a")) }, []byte{1, 2, 3}},
		{"entry names another record", func(pp []byte) []byte { return entryKey(pp, []byte("a")) }, encodePair(1, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			l := &memLog{}
			s := New(db)
			p := Partition{Topic: "t", ID: 0, Incarnation: 1, Log: l}
			l.put(rec("a", "1"), rec("b", "2"))
			wantValue(t, s, p, "a", "1", 0)
			if err := db.Set(tc.key(partPrefix("t", 0)), tc.val, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			wantValue(t, s, p, "a", "1", 0)
			wantValue(t, s, p, "b", "2", 1)
			if s.Rebuilds() != 2 {
				t.Fatalf("rebuilds = %d, want 2", s.Rebuilds())
			}
		})
	}
}

func TestRebuildWhenLogStartPassesIndex(t *testing.T) {
	l := &memLog{}
	s := New(openDB(t))
	p := Partition{Topic: "t", ID: 0, Incarnation: 1, Log: l}
	l.put(rec("gone", "1"))
	l.put(rec("kept", "1"))
	wantValue(t, s, p, "gone", "1", 0)
	l.put(rec("unseen", "x")) // offset 2: removed before the index read it
	l.put(rec("kept", "2"))
	l.start = 3
	wantAbsent(t, s, p, "gone")
	wantAbsent(t, s, p, "unseen")
	wantValue(t, s, p, "kept", "2", 3)
	if s.Rebuilds() != 2 {
		t.Fatalf("rebuilds = %d, want 2", s.Rebuilds())
	}
	// An entry below the log start reads as absent without a rebuild.
	l.put(rec("late", "1"))
	wantValue(t, s, p, "late", "1", 4)
	l.start = 4
	wantAbsent(t, s, p, "kept")
	es, _, err := s.List(p, nil, nil, 10)
	if err != nil || len(es) != 1 || string(es[0].Key) != "late" {
		t.Fatalf("list = %v, %v; want only late", es, err)
	}
}

func TestNewIncarnationRebuilds(t *testing.T) {
	db := openDB(t)
	s := New(db)
	old := &memLog{}
	old.put(rec("a", "old"), rec("b", "old"))
	wantValue(t, s, Partition{Topic: "t", Incarnation: 1, Log: old}, "b", "old", 1)
	// The topic is created again: its log starts over, here as long.
	fresh := &memLog{}
	fresh.put(rec("a", "new"), rec("c", "new"))
	p := Partition{Topic: "t", Incarnation: 2, Log: fresh}
	wantAbsent(t, s, p, "b")
	wantValue(t, s, p, "a", "new", 0)
}

func TestCatchUpReadsInChunks(t *testing.T) {
	l := &memLog{}
	s := New(openDB(t))
	p := Partition{Topic: "t", Incarnation: 1, Log: l}
	val := bytes.Repeat([]byte("v"), 64<<10)
	for i := range 40 { // 2.5 MiB
		l.put(batch.Record{Key: fmt.Appendf(nil, "k%02d", i), Value: val})
	}
	wantValue(t, s, p, "k39", string(val), 39)
	if len(l.reads) < 4 {
		t.Fatalf("%d reads of the log, want at least 3 chunks and the record", len(l.reads))
	}
	for _, n := range l.reads {
		if n > ChunkBytes {
			t.Fatalf("a read of %d bytes, over ChunkBytes", n)
		}
	}
}

func TestListPrefixPages(t *testing.T) {
	l := &memLog{}
	s := New(openDB(t))
	p := Partition{Topic: "t", Incarnation: 1, Log: l}
	l.put(rec("app/1", "a"), rec("app/2", "b"), rec("app/3", "c"), rec("apq", "x"), rec("ap", "y"), rec("app/2", "<nil>"))
	var got []string
	var after []byte
	for {
		es, more, err := s.List(p, []byte("app/"), after, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			got = append(got, fmt.Sprintf("%s@%d", e.Key, e.Offset))
			after = e.Key
		}
		if !more {
			break
		}
	}
	if fmt.Sprint(got) != "[app/1@0 app/3@2]" {
		t.Fatalf("list app/ = %v", got)
	}
	all, more, err := s.List(p, nil, nil, 100)
	if err != nil || more || len(all) != 4 {
		t.Fatalf("list all = %v more=%v err=%v, want 4 entries", all, more, err)
	}
}

func TestPartitionsAndTopicsAreSeparate(t *testing.T) {
	db := openDB(t)
	s := New(db)
	l0, l1, lt := &memLog{}, &memLog{}, &memLog{}
	l0.put(rec("k", "p0"))
	l1.put(rec("k", "p1"))
	lt.put(rec("k", "t2"))
	p0 := Partition{Topic: "t", ID: 0, Incarnation: 1, Log: l0}
	p1 := Partition{Topic: "t", ID: 1, Incarnation: 1, Log: l1}
	pt := Partition{Topic: "t2", ID: 0, Incarnation: 1, Log: lt}
	wantValue(t, s, p0, "k", "p0", 0)
	wantValue(t, s, p1, "k", "p1", 0)
	wantValue(t, s, pt, "k", "t2", 0)
	if err := s.Drop("t"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.loadState(partPrefix("t", 1)); ok {
		t.Fatal("Drop left the state of t-1")
	}
	if _, ok, _ := s.loadState(partPrefix("t2", 0)); !ok {
		t.Fatal("Drop of t removed the index of t2")
	}
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, args ...any) {
	panic(fmt.Sprintf(f, args...))
}

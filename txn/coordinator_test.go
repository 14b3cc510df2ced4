package txn

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

type memStore struct {
	mu   sync.Mutex
	recs map[string]Record
	fail error
}

func (s *memStore) Put(_ context.Context, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.recs[r.ID] = DecodeMust(r.Encode())
	return nil
}

func (s *memStore) Confirm(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

func DecodeMust(b []byte) Record {
	r, err := DecodeRecord(b)
	if err != nil {
		panic(err)
	}
	return r
}

type marker struct {
	pid    int64
	epoch  int16
	txn    int32
	commit bool
	parts  []TopicPartition
}

type memWriter struct {
	mu      sync.Mutex
	markers []marker
	offsets map[string][]Offset
	fail    error
}

func (w *memWriter) WriteMarkers(_ context.Context, m Marker, parts []TopicPartition) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return w.fail
	}
	w.markers = append(w.markers, marker{m.ProducerID, m.Epoch, m.Txn, m.Commit, parts})
	return nil
}

func (w *memWriter) CommitOffsets(_ context.Context, group string, offs []Offset) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.offsets[group] = append(w.offsets[group], offs...)
	return nil
}

type fixture struct {
	c     *Coordinator
	store *memStore
	w     *memWriter
	now   time.Time
}

func newFixture(recs ...Record) *fixture {
	f := &fixture{store: &memStore{recs: map[string]Record{}}, w: &memWriter{offsets: map[string][]Offset{}}, now: time.UnixMilli(1_000_000)}
	next := int64(100)
	f.c = New(Config{Store: f.store, Writer: f.w, Records: recs, Now: func() time.Time { return f.now },
		NewProducerID: func() (int64, error) { next++; return next, nil }})
	return f
}

func code(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

var ctx = context.Background()

func TestCommitWritesMarkersThenOffsets(t *testing.T) {
	f := newFixture()
	pid, epoch, err := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || epoch != 0 {
		t.Fatalf("init: %d %d %v", pid, epoch, err)
	}
	tp := []TopicPartition{{"a", 0}, {"b", 1}}
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, tp); err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddOffsets(ctx, "t", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CommitOffsets(ctx, "t", pid, epoch, "g", []Offset{{Topic: "in", Offset: 7}}, false); err != nil {
		t.Fatal(err)
	}
	if len(f.w.offsets) != 0 {
		t.Fatalf("offsets committed before the transaction: %v", f.w.offsets)
	}
	if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if len(f.w.markers) != 1 || !f.w.markers[0].commit || len(f.w.markers[0].parts) != 2 {
		t.Fatalf("markers %+v", f.w.markers)
	}
	if o := f.w.offsets["g"]; len(o) != 1 || o[0].Offset != 7 {
		t.Fatalf("offsets %v", f.w.offsets)
	}
	if r := f.store.recs["t"]; r.State != CompleteCommit || len(r.Partitions) != 0 {
		t.Fatalf("stored %+v", r)
	}
	// A retried commit is answered; an abort of it is refused.
	if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if err := f.c.End(ctx, "t", pid, epoch, false); code(err) != CodeInvalidState {
		t.Fatalf("abort after commit: %v", err)
	}
}

func TestAbortDropsOffsets(t *testing.T) {
	f := newFixture()
	pid, epoch, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}})
	_ = f.c.AddOffsets(ctx, "t", pid, epoch, "g")
	_ = f.c.CommitOffsets(ctx, "t", pid, epoch, "g", []Offset{{Topic: "in", Offset: 7}}, false)
	if err := f.c.End(ctx, "t", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	if len(f.w.offsets) != 0 || len(f.w.markers) != 1 || f.w.markers[0].commit {
		t.Fatalf("offsets %v markers %+v", f.w.offsets, f.w.markers)
	}
}

func TestInitFencesAndAbortsPrevious(t *testing.T) {
	f := newFixture()
	pid, e0, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	_ = f.c.AddPartitions(ctx, "t", pid, e0, []TopicPartition{{"a", 0}})
	pid2, e1, err := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || pid2 != pid || e1 <= e0 {
		t.Fatalf("second init: %d %d %v", pid2, e1, err)
	}
	if len(f.w.markers) != 1 || f.w.markers[0].commit || f.w.markers[0].epoch <= e0 {
		t.Fatalf("the open transaction was not aborted under a new epoch: %+v", f.w.markers)
	}
	for _, err := range []error{
		f.c.AddPartitions(ctx, "t", pid, e0, []TopicPartition{{"a", 1}}),
		f.c.AddOffsets(ctx, "t", pid, e0, "g"),
		f.c.End(ctx, "t", pid, e0, true),
	} {
		if code(err) != CodeProducerFenced {
			t.Fatalf("old epoch: %v, want fenced", err)
		}
	}
	if _, _, err := f.c.InitProducerID(ctx, "t", time.Minute, pid, e0); code(err) != CodeProducerFenced {
		t.Fatalf("init with the old epoch: %v", err)
	}
	if err := f.c.End(ctx, "t", pid, e1, true); code(err) != CodeInvalidState {
		t.Fatalf("end with no transaction: %v", err)
	}
}

func TestTickAbortsExpiredAndFinishesPrepared(t *testing.T) {
	f := newFixture(Record{ID: "p", ProducerID: 9, Epoch: 3, State: PrepareCommit, TimeoutMs: 1000,
		Partitions: []TopicPartition{{"x", 0}}, Groups: []string{"g"}, Offsets: map[string][]Offset{"g": {{Topic: "in", Offset: 5}}}})
	pid, epoch, _ := f.c.InitProducerID(ctx, "t", time.Second, -1, -1)
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}})
	if err := f.c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.c.Get("p"); r.State != CompleteCommit || f.w.offsets["g"][0].Offset != 5 {
		t.Fatalf("prepared record not finished: %+v %v", r, f.w.offsets)
	}
	if r, _ := f.c.Get("t"); r.State != Ongoing {
		t.Fatalf("aborted before its timeout: %+v", r)
	}
	f.now = f.now.Add(2 * time.Second)
	if err := f.c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := f.c.Get("t")
	if r.State != CompleteAbort || r.Epoch <= epoch {
		t.Fatalf("expired transaction: %+v", r)
	}
	if err := f.c.End(ctx, "t", pid, epoch, true); code(err) != CodeProducerFenced {
		t.Fatalf("commit after the timeout: %v, want fenced", err)
	}
}

func TestFailedStoreChangesNothing(t *testing.T) {
	f := newFixture()
	pid, epoch, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	f.store.fail = errors.New("no quorum")
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); err == nil {
		t.Fatal("add partitions stored nowhere succeeded")
	}
	if r, _ := f.c.Get("t"); r.State != Empty {
		t.Fatalf("memory changed without the store: %+v", r)
	}
	f.store.fail = nil
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}})
	f.w.fail = errors.New("partition unavailable")
	if err := f.c.End(ctx, "t", pid, epoch, true); err == nil {
		t.Fatal("commit without markers succeeded")
	}
	if r := f.store.recs["t"]; r.State != PrepareCommit {
		t.Fatalf("decision not kept: %+v", r)
	}
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, nil); code(err) != CodeConcurrent {
		t.Fatalf("add while ending: %v", err)
	}
	f.w.fail = nil
	if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidTimeout(t *testing.T) {
	f := newFixture()
	if _, _, err := f.c.InitProducerID(ctx, "t", 16*time.Minute, -1, -1); code(err) != CodeInvalidTimeout {
		t.Fatal(err)
	}
}

// Each transaction of a producer id has its own number, carried by its
// markers, the same in every write of them (a retry after a failed
// write, Tick's, an abort at InitProducerID); a new producer id numbers
// from 1 again.
func TestMarkersCarryTheTransactionNumber(t *testing.T) {
	f := newFixture()
	pid, epoch, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	tp := []TopicPartition{{"a", 0}}
	for want := int32(1); want <= 2; want++ {
		if err := f.c.AddPartitions(ctx, "t", pid, epoch, tp); err != nil {
			t.Fatal(err)
		}
		if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
			t.Fatal(err)
		}
		if m := f.w.markers[len(f.w.markers)-1]; m.txn != want {
			t.Fatalf("transaction %d's marker carries %d", want, m.txn)
		}
	}
	// Transaction 3's first marker write fails; the retry and Tick
	// carry 3 again.
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, tp)
	f.w.fail = errors.New("partition leader gone")
	if err := f.c.End(ctx, "t", pid, epoch, false); code(err) != CodeConcurrent {
		t.Fatalf("end with a failed marker write: %v", err)
	}
	f.w.fail = nil
	if err := f.c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.c.End(ctx, "t", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	if m := f.w.markers[len(f.w.markers)-1]; m.txn != 3 || m.commit || len(f.w.markers) != 3 {
		t.Fatalf("markers %+v, want transaction 3's abort written once after the failure", f.w.markers)
	}
	// An abort at InitProducerID carries the open transaction's number.
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, tp)
	pid2, epoch2, err := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || pid2 != pid {
		t.Fatalf("init: %d %v", pid2, err)
	}
	if m := f.w.markers[len(f.w.markers)-1]; m.txn != 4 || m.commit {
		t.Fatalf("abort at init: %+v, want transaction 4's", m)
	}
	// A producer id that numbered all its transactions is replaced.
	e := f.c.lock("t")
	e.rec.Txn = math.MaxInt32
	e.mu.Unlock()
	if err := f.c.AddPartitions(ctx, "t", pid2, epoch2, tp); code(err) != CodeProducerFenced {
		t.Fatalf("begin past the last number: %v, want fenced", err)
	}
	pid3, _, err := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || pid3 == pid2 {
		t.Fatalf("init after the last number: producer id %d (was %d), %v", pid3, pid2, err)
	}
	if r, _ := f.c.Get("t"); r.Txn != 0 {
		t.Fatalf("a new producer id starts at number %d, want 0", r.Txn)
	}
}

// An answer given from memory, without a write (a partition or group
// added already, a retried end), is confirmed with the Store first: a
// coordinator that lost its lead without knowing it answers the error,
// not its stale record.
func TestAnswersFromMemoryAreConfirmed(t *testing.T) {
	f := newFixture()
	pid, epoch, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	tp := []TopicPartition{{"a", 0}}
	_ = f.c.AddPartitions(ctx, "t", pid, epoch, tp)
	_ = f.c.AddOffsets(ctx, "t", pid, epoch, "g")
	lost := errors.New("no longer leads the metadata")
	f.store.fail = lost
	if err := f.c.AddPartitions(ctx, "t", pid, epoch, tp); !errors.Is(err, lost) {
		t.Fatalf("a partition added again on a coordinator that lost its lead: %v", err)
	}
	if err := f.c.AddOffsets(ctx, "t", pid, epoch, "g"); !errors.Is(err, lost) {
		t.Fatalf("a group added again: %v", err)
	}
	f.store.fail = nil
	if err := f.c.End(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	f.store.fail = lost
	if err := f.c.End(ctx, "t", pid, epoch, true); !errors.Is(err, lost) {
		t.Fatalf("a retried commit: %v", err)
	}
}

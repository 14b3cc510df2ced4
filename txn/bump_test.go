package txn

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Under transaction version 2 the producer's first batch in a partition
// adds it, its offsets add their group, and each end bumps the epoch:
// the markers carry the bumped epoch, the old epoch is refused
// everywhere (a late batch of transaction N cannot join N+1), and a
// retry of the end is answered as the end was.
func TestEndBumpFencesTheEndedEpoch(t *testing.T) {
	f := newFixture()
	pid, e0, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	n1, err := f.c.AddPartition(ctx, "t", pid, e0, TopicPartition{"a", 0})
	if err != nil || n1 != 1 {
		t.Fatalf("add by produce: %d %v", n1, err)
	}
	if err := f.c.CommitOffsets(ctx, "t", pid, e0, "g", []Offset{{Topic: "in", Offset: 3}}, true); err != nil {
		t.Fatalf("offsets adding their group: %v", err)
	}
	p1, e1, err := f.c.EndBump(ctx, "t", pid, e0, true)
	if err != nil || p1 != pid || e1 != e0+1 {
		t.Fatalf("end: %d %d %v, want %d %d", p1, e1, err, pid, e0+1)
	}
	if len(f.w.markers) != 1 || f.w.markers[0].epoch != e1 || !f.w.markers[0].commit || f.w.markers[0].txn != 1 {
		t.Fatalf("markers %+v, want one commit at the bumped epoch", f.w.markers)
	}
	if o := f.w.offsets["g"]; len(o) != 1 || o[0].Offset != 3 {
		t.Fatalf("offsets %v", f.w.offsets)
	}
	// A retry of the end is answered again, with the epoch to go on with.
	if p, e, err := f.c.EndBump(ctx, "t", pid, e0, true); err != nil || p != pid || e != e1 {
		t.Fatalf("retried end: %d %d %v", p, e, err)
	}
	if len(f.w.markers) != 1 {
		t.Fatalf("a retry wrote markers again: %+v", f.w.markers)
	}
	// Transaction 2 begins at the new epoch; the ended epoch is fenced
	// everywhere, its retry of the end included.
	if n, err := f.c.AddPartition(ctx, "t", pid, e1, TopicPartition{"b", 0}); err != nil || n != 2 {
		t.Fatalf("transaction 2: %d %v", n, err)
	}
	if _, err := f.c.AddPartition(ctx, "t", pid, e0, TopicPartition{"a", 0}); code(err) != CodeProducerFenced {
		t.Fatalf("late batch of transaction 1 while 2 is ongoing: %v, want fenced", err)
	}
	if _, err := f.c.Verify("t", pid, e0, TopicPartition{"b", 0}); code(err) != CodeProducerFenced {
		t.Fatalf("verify at the ended epoch: %v, want fenced", err)
	}
	if _, _, err := f.c.EndBump(ctx, "t", pid, e0, true); code(err) != CodeProducerFenced {
		t.Fatalf("retry once transaction 2 began: %v, want fenced", err)
	}
	if _, _, err := f.c.EndBump(ctx, "t", pid, e1, false); err != nil {
		t.Fatal(err)
	}
	// An abort with nothing open only bumps the epoch; a commit is refused.
	r, _ := f.c.Get("t")
	p, e, err := f.c.EndBump(ctx, "t", pid, r.Epoch, false)
	if err != nil || p != pid || e != r.Epoch+1 || len(f.w.markers) != 2 {
		t.Fatalf("empty abort: %d %d %v, markers %+v", p, e, err, f.w.markers)
	}
	if _, _, err := f.c.EndBump(ctx, "t", pid, e, true); code(err) != CodeInvalidState {
		t.Fatalf("empty commit: %v", err)
	}
}

// An end at the producer id's last epoch moves the producer to a new id
// at epoch 0, chosen with the decision; the markers fence the old id's
// last epoch, and a retry of the end answers the new id.
func TestEndBumpAtTheLastEpochTakesANewProducerID(t *testing.T) {
	f := newFixture(Record{ID: "t", ProducerID: 7, Epoch: math.MaxInt16 - 1, State: Ongoing, TimeoutMs: 60_000, Txn: 4,
		StartMs: f0ms, Partitions: []TopicPartition{{"a", 0}}})
	p, e, err := f.c.EndBump(ctx, "t", 7, math.MaxInt16-1, false)
	if err != nil || p == 7 || e != 0 {
		t.Fatalf("end: %d %d %v, want a new id at epoch 0", p, e, err)
	}
	if m := f.w.markers; len(m) != 1 || m[0].pid != 7 || m[0].epoch != math.MaxInt16 || m[0].txn != 4 {
		t.Fatalf("markers %+v", m)
	}
	if r := f.store.recs["t"]; r.ProducerID != p || r.Epoch != 0 || r.Txn != 0 || r.State != CompleteAbort {
		t.Fatalf("stored %+v", r)
	}
	if p2, e2, err := f.c.EndBump(ctx, "t", 7, math.MaxInt16-1, false); err != nil || p2 != p || e2 != 0 {
		t.Fatalf("retry: %d %d %v", p2, e2, err)
	}
	if n, err := f.c.AddPartition(ctx, "t", p, 0, TopicPartition{"a", 0}); err != nil || n != 1 {
		t.Fatalf("next transaction: %d %v", n, err)
	}
}

const f0ms = 1_000_000

// An end decided before a failover is finished by the next coordinator
// with the same bumped epoch and new producer id, and a producer's retry
// of it there is answered as the end was.
func TestEndBumpFinishedByTheNextCoordinator(t *testing.T) {
	f := newFixture()
	pid, e0, _ := f.c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if _, err := f.c.AddPartition(ctx, "t", pid, e0, TopicPartition{"a", 0}); err != nil {
		t.Fatal(err)
	}
	f.w.fail = errors.New("partition unavailable")
	if _, _, err := f.c.EndBump(ctx, "t", pid, e0, true); code(err) != CodeConcurrent {
		t.Fatalf("end with failing markers: %v", err)
	}
	f.w.fail = nil
	next := newFixture(f.store.recs["t"])
	next.w = f.w
	next.c.cfg.Writer = f.w
	if p, e, err := next.c.EndBump(ctx, "t", pid, e0, true); err != nil || p != pid || e != e0+1 {
		t.Fatalf("retry on the next coordinator: %d %d %v", p, e, err)
	}
	if m := f.w.markers; len(m) != 1 || m[0].epoch != e0+1 || !m[0].commit {
		t.Fatalf("markers %+v", m)
	}
}

// A transaction aborted at its timeout bumps the epoch too; its
// producer's abort at the old epoch is answered as that abort, its
// commit is fenced.
func TestEndBumpAfterTimeoutAbort(t *testing.T) {
	f := newFixture()
	pid, e0, _ := f.c.InitProducerID(ctx, "t", time.Second, -1, -1)
	if _, err := f.c.AddPartition(ctx, "t", pid, e0, TopicPartition{"a", 0}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(2 * time.Second)
	if err := f.c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndBump(ctx, "t", pid, e0, true); code(err) != CodeProducerFenced {
		t.Fatalf("commit after the timeout: %v, want fenced", err)
	}
	if p, e, err := f.c.EndBump(ctx, "t", pid, e0, false); err != nil || p != pid || e != e0+1 {
		t.Fatalf("abort after the timeout: %d %d %v", p, e, err)
	}
}

// A record with Ended encodes at version 1 and decodes back; a record
// without it encodes as before (no version), and a version this logd
// does not know is refused.
func TestRecordVersions(t *testing.T) {
	np := int64(12)
	r := Record{ID: "t", ProducerID: 5, Epoch: 2, State: CompleteCommit, Ended: &Ended{ProducerID: 5, Epoch: 1, Commit: true, NextProducerID: &np}}
	b := r.Encode()
	got, err := DecodeRecord(b)
	if err != nil || got.Version != 1 || got.Ended == nil || *got.Ended.NextProducerID != 12 || !got.Ended.Commit {
		t.Fatalf("decoded %s: %+v %v", b, got, err)
	}
	r.Ended = nil
	if b := string(r.Encode()); strings.Contains(b, `"v"`) || strings.Contains(b, "ended") {
		t.Fatalf("record without Ended encoded as %s", b)
	}
	if _, err := DecodeRecord([]byte(`{"v":2,"id":"t","producer_id":1,"epoch":0,"state":0,"timeout_ms":1}`)); err == nil {
		t.Fatal("version 2 decoded")
	}
}

// FuzzDecodeRecord: DecodeRecord never panics, and what it decodes
// encodes to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	// The encoding without a version (every record without Ended).
	f.Add([]byte(`{"id":"t","producer_id":9,"epoch":3,"state":1,"timeout_ms":60000,"txn":2,"start_ms":5,"partitions":[{"topic":"a","partition":0}],"groups":["g"],"offsets":{"g":[{"topic":"in","partition":0,"offset":7}]}}`))
	// Version 1, with Ended.
	f.Add([]byte(`{"v":1,"id":"t","producer_id":9,"epoch":4,"state":4,"timeout_ms":60000,"txn":2,"ended":{"producer_id":9,"epoch":3,"commit":true,"next_producer_id":11}}`))
	f.Add([]byte(`{"v":3,"id":"t","state":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		again, err := DecodeRecord(r.Encode())
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if (again.Ended == nil) != (r.Ended == nil) || again.ID != r.ID || again.State != r.State || again.Epoch != r.Epoch {
			t.Fatalf("round trip: %+v != %+v", again, r)
		}
	})
}

package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// pipelineProducer returns a producer whose batches hold 3 records of
// pipelineValue, on a fake with topic "t" of one partition.
func pipelineProducer(t *testing.T, opts ProducerOptions) (*fakeServer, *Producer) {
	t.Helper()
	f, c := dialFake(t)
	f.createTopic("t", 1)
	opts.MaxBatchBytes = 300
	p := c.NewProducer(opts)
	t.Cleanup(func() { p.Close() })
	return f, p
}

func pipelineValue(i int) []byte { return fmt.Appendf(nil, "%040d", i) }

// hold makes the fake hold every produce until the returned func is called.
func hold(f *fakeServer) (release func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.gate = nil
		f.mu.Unlock()
		close(gate)
	}
}

// waitReceived waits until the fake's streams received n requests.
func waitReceived(t *testing.T, f *fakeServer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		got := f.streamReceived
		f.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake received %d stream requests, want %d in flight at once", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// confirm produces record 0 and waits for it: the fake then knows the
// producer id and batches pipeline. With a long linger, the batches after it
// are then exactly 3 records each (flushed at the end).
func confirm(t *testing.T, p *Producer) {
	t.Helper()
	ctx := context.Background()
	fu := p.Produce(ctx, Record{Topic: "t", Value: pipelineValue(0)})
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fu.Get(ctx); err != nil {
		t.Fatal(err)
	}
}

func produceRange(p *Producer, from, to int) []*Future {
	var fs []*Future
	for i := from; i < to; i++ {
		fs = append(fs, p.Produce(context.Background(), Record{Topic: "t", Value: pipelineValue(i)}))
	}
	return fs
}

// checkStored fails unless partition 0 holds exactly the values want, in
// order.
func checkStored(t *testing.T, f *fakeServer, want []int) {
	t.Helper()
	recs := f.records(t, "t", 0)
	if len(recs) != len(want) {
		t.Fatalf("%d records stored, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if string(r.Value) != string(pipelineValue(want[i])) {
			t.Fatalf("offset %d holds %s, want %s", i, r.Value, pipelineValue(want[i]))
		}
	}
}

// Full batches are pipelined, once the server has acknowledged one batch of
// the producer id: before that, one batch at a time (an unknown producer is
// accepted at any sequence, so a second batch could overtake a failed first).
func TestProducerPipelinesFullBatchesOnceConfirmed(t *testing.T) {
	f, p := pipelineProducer(t, ProducerOptions{})
	release := hold(f)
	first := produceRange(p, 0, 15)
	waitReceived(t, f, 1)
	time.Sleep(100 * time.Millisecond)
	f.mu.Lock()
	got := f.streamReceived
	f.mu.Unlock()
	if got != 1 {
		t.Fatalf("%d batches in flight before the producer was acknowledged, want 1", got)
	}
	release()
	release = hold(f)
	second := produceRange(p, 15, 30)
	// Waiting for the first 15 needs no flush: their last batch is full.
	waitReceived(t, f, got+maxInFlightPerPartition)
	release()
	ctx := context.Background()
	for i, fu := range append(first, second...) {
		ack, err := fu.Get(ctx)
		if err != nil || ack.Offset != int64(i) {
			t.Fatalf("record %d: %+v %v", i, ack, err)
		}
	}
	var want []int
	for i := range 30 {
		want = append(want, i)
	}
	checkStored(t, f, want)
}

// A batch in the middle of a window fails for good: its records fail, and
// the batches sent after it (refused as out of order, since their sequences
// followed it) are re-encoded at its sequence and stored once, in order.
// Resending them unchanged would be refused until the delivery timeout.
func TestProducerRewindsSequenceAfterPermanentFailure(t *testing.T) {
	f, p := pipelineProducer(t, ProducerOptions{Linger: time.Hour, DeliveryTimeout: 3 * time.Second, RetryBackoff: time.Millisecond})
	ctx := context.Background()
	confirm(t, p)
	n := 0
	f.mu.Lock()
	f.beforeAppend = func(*logdv1.ProduceRequest) error {
		if n++; n == 1 {
			return status.Error(codes.InvalidArgument, "refused")
		}
		return nil
	}
	f.mu.Unlock()
	release := hold(f)
	fs := produceRange(p, 1, 16) // 5 batches of 3: 4 in flight, 1 open until Flush
	waitReceived(t, f, 1+maxInFlightPerPartition)
	release()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := []int{0}
	next := int64(1)
	for i, fu := range fs {
		ack, err := fu.Get(ctx)
		if i < 3 {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("record %d of the refused batch: err %v, want INVALID_ARGUMENT", i+1, err)
			}
			continue
		}
		if err != nil || ack.Offset != next {
			t.Fatalf("record %d: %+v %v, want offset %d", i+1, ack, err, next)
		}
		next++
		want = append(want, i+1)
	}
	checkStored(t, f, want)
}

// The head of a window is appended but its answer is lost; the batches after
// it are appended and answered. The head's retry is a duplicate: nothing is
// stored twice and the acknowledgements carry the original offsets.
func TestProducerRetryInWindowDoesNotDuplicate(t *testing.T) {
	f, p := pipelineProducer(t, ProducerOptions{Linger: time.Hour, RetryBackoff: time.Millisecond})
	ctx := context.Background()
	confirm(t, p)
	n := 0
	f.mu.Lock()
	f.afterAppend = func(*logdv1.ProduceRequest) error {
		if n++; n == 1 {
			return status.Error(codes.Unavailable, "answer lost")
		}
		return nil
	}
	f.mu.Unlock()
	release := hold(f)
	fs := produceRange(p, 1, 16)
	waitReceived(t, f, 1+maxInFlightPerPartition)
	release()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	dups := 0
	for i, fu := range fs {
		ack, err := fu.Get(ctx)
		if err != nil || ack.Offset != int64(i+1) {
			t.Fatalf("record %d: %+v %v", i+1, ack, err)
		}
		if ack.Duplicate {
			dups++
		}
	}
	if dups != 3 {
		t.Fatalf("%d acknowledgements marked duplicate, want the 3 of the retried batch", dups)
	}
	var want []int
	for i := range 16 {
		want = append(want, i)
	}
	checkStored(t, f, want)
}

// A batch given up on at its delivery timeout, whose outcome is unknown
// (every attempt went unanswered), may still reach a partition later: a
// server holds it while the partition has no leader. The producer goes on
// as its next epoch, so that late attempt, arriving after the next
// record was appended, is refused as of an older epoch: a record that
// failed never lands after a later one of the same producer.
func TestProducerAbandonedBatchArrivingLateIsFenced(t *testing.T) {
	f, p := pipelineProducer(t, ProducerOptions{DeliveryTimeout: 300 * time.Millisecond, RetryBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	confirm(t, p)
	var late *logdv1.ProduceRequest
	f.mu.Lock()
	f.beforeAppend = func(req *logdv1.ProduceRequest) error {
		if late == nil {
			late = req
		}
		return status.Error(codes.Unavailable, "partition t-0 has no leader right now")
	}
	f.mu.Unlock()
	if _, err := p.Produce(ctx, Record{Topic: "t", Value: pipelineValue(1)}).Get(ctx); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("record 1: %v, want the delivery timeout", err)
	}
	f.mu.Lock()
	f.beforeAppend = nil
	f.mu.Unlock()
	if _, err := p.Produce(ctx, Record{Topic: "t", Value: pipelineValue(2)}).Get(ctx); err != nil {
		t.Fatalf("record 2: %v", err)
	}
	if late == nil {
		t.Fatal("record 1 was never sent")
	}
	if _, err := f.Produce(ctx, late); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("record 1's attempt arriving after record 2: %v, want refused (an older epoch)", err)
	}
	checkStored(t, f, []int{0, 2})
}

package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
)

// produceTo appends one batch of vals to partition part of topic.
func produceTo(t *testing.T, b *broker.Broker, topic string, part int32, vals ...string) {
	t.Helper()
	_, err := b.Produce(context.Background(), broker.ProduceRequest{Topic: topic, Partition: part, Batch: records(vals...)})
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, part, err)
	}
}

// fetch runs one fetch and releases its answer's budget at the test's end.
func fetch(t *testing.T, b *broker.Broker, r broker.FetchRequest) []broker.FetchedPartition {
	t.Helper()
	res, err := b.Fetch(context.Background(), r)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	t.Cleanup(res.Release)
	return res.Partitions
}

// A fetch's MaxBytes bounds the whole answer and a partition's MaxBytes
// its share, but a partition with data answers at least one whole batch.
func TestFetchMaxBytes(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 2)
	for _, p := range []int32{0, 1} {
		produceTo(t, b, "t", p, "a", "b")
		produceTo(t, b, "t", p, "c")
		produceTo(t, b, "t", p, "d")
	}
	both := []broker.FetchPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}

	got := fetch(t, b, broker.FetchRequest{Partitions: both})
	for _, fp := range got {
		if fp.Err != nil || fp.Records != 4 || fp.NextOffset != 4 || fp.HighWatermark != 4 {
			t.Fatalf("unbounded fetch: %+v, want all 4 records of each", fp)
		}
	}

	got = fetch(t, b, broker.FetchRequest{Partitions: both, MaxBytes: 1})
	if got[0].Err != nil || got[0].Records != 2 || got[0].NextOffset != 2 {
		t.Fatalf("fetch of 1 byte, first partition: %+v, want its first batch whole", got[0])
	}
	if got[1].Err != nil || got[1].Records != 0 || got[1].Batches != nil || got[1].NextOffset != 0 {
		t.Fatalf("fetch of 1 byte, second partition: %+v, want nothing (the answer is full)", got[1])
	}

	one := []broker.FetchPartition{{Topic: "t", Partition: 0, MaxBytes: 1}, {Topic: "t", Partition: 1, Offset: 2, MaxBytes: 1}}
	got = fetch(t, b, broker.FetchRequest{Partitions: one})
	if got[0].Records != 2 || got[0].NextOffset != 2 || got[1].Records != 1 || got[1].NextOffset != 3 {
		t.Fatalf("shares of 1 byte: %+v, want one batch of each partition", got)
	}
	// Decode charges the budget twice; the answer is the same.
	got = fetch(t, b, broker.FetchRequest{Partitions: one, Decode: true})
	if got[0].Records != 2 || got[1].Records != 1 {
		t.Fatalf("decoded: %+v", got)
	}
}

// Each partition of a fetch fails alone: an unknown topic, a negative
// offset or share, an offset past the high watermark or below the start;
// the others are read.
func TestFetchPartitionErrors(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "a")
	got := fetch(t, b, broker.FetchRequest{Partitions: []broker.FetchPartition{
		{Topic: "nope"},
		{Topic: "t", Offset: -1},
		{Topic: "t", MaxBytes: -1},
		{Topic: "t", Offset: 5},
		{Topic: "t"},
	}})
	if !errors.Is(got[0].Err, broker.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v, want ErrUnknownTopic", got[0].Err)
	}
	if !errors.Is(got[1].Err, kind.ErrInvalidArgument) || !errors.Is(got[2].Err, kind.ErrInvalidArgument) {
		t.Errorf("negative offset, share: %v, %v, want kind.ErrInvalidArgument", got[1].Err, got[2].Err)
	}
	var oor *log.OutOfRangeError
	if !errors.As(got[3].Err, &oor) || got[3].NextOffset != 5 {
		t.Errorf("past the high watermark: %+v, want *OutOfRangeError", got[3])
	}
	if got[4].Err != nil || got[4].Records != 1 {
		t.Errorf("the good partition: %+v, want its record", got[4])
	}
	if got[0].Topic != "nope" || got[4].Topic != "t" {
		t.Errorf("answers out of order: %+v", got)
	}
}

// A long poll at the high watermark answers the first commit to any of
// its partitions, and no later than MaxWait with nothing.
func TestFetchLongPollWakesOnAnyPartition(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 3)
	type answer struct {
		res broker.FetchResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := b.Fetch(context.Background(), broker.FetchRequest{MinBytes: 1, MaxWait: time.Hour,
			Partitions: []broker.FetchPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}})
		done <- answer{res, err}
	}()
	produceTo(t, b, "t", 2, "x", "y")
	var a answer
	select {
	case a = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a long poll of an hour did not answer 30s after a commit to one of its partitions")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.res.Release()
	if p := a.res.Partitions; p[0].Records != 0 || p[1].Records != 0 || p[2].Records != 2 {
		t.Fatalf("answer: %+v, want the 2 records of partition 2 only", p)
	}

	// Nothing comes: MaxWait ends the wait with an empty answer.
	got := fetch(t, b, broker.FetchRequest{MinBytes: 1, MaxWait: time.Millisecond,
		Partitions: []broker.FetchPartition{{Topic: "t", Partition: 0}}})
	if got[0].Err != nil || got[0].Records != 0 {
		t.Fatalf("after MaxWait: %+v, want nothing and no error", got[0])
	}
}

// MinBytes above what is there keeps a fetch waiting; until MaxWait, the
// context's end or a commit that brings enough.
func TestFetchMinBytesWaitsForEnough(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "small")
	// A fetch that wants more than there is and waits an hour ends with
	// its context.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		res, err := b.Fetch(ctx, broker.FetchRequest{MinBytes: 1 << 20, MaxWait: time.Hour,
			Partitions: []broker.FetchPartition{{Topic: "t"}}})
		if err == nil {
			res.Release()
		}
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled long poll: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled long poll did not return in 30s")
	}

	// A commit that brings MinBytes answers it, with everything there.
	go func() {
		res, err := b.Fetch(context.Background(), broker.FetchRequest{MinBytes: 200, MaxWait: time.Hour,
			Partitions: []broker.FetchPartition{{Topic: "t"}}})
		if err == nil && (res.Partitions[0].Err != nil || len(res.Partitions[0].Batches) < 200) {
			err = errors.New("answered with less than MinBytes")
		}
		if err == nil {
			res.Release()
		}
		done <- err
	}()
	big := make([]string, 20)
	for i := range big {
		big[i] = "a value long enough to pass two hundred bytes in all"
	}
	produceTo(t, b, "t", 0, big...)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a long poll did not answer 30s after MinBytes were committed")
	}
}

// A long poll ends when its topic is deleted (with ErrUnknownTopic for
// the partition) and when the broker shuts down (with what there is).
func TestFetchLongPollEndsOnDeleteAndShutdown(t *testing.T) {
	b := open(t)
	createTopic(t, b, "gone", 1)
	createTopic(t, b, "t", 1)
	done := make(chan broker.FetchResult, 1)
	errc := make(chan error, 1)
	poll := func(topic string) {
		res, err := b.Fetch(context.Background(), broker.FetchRequest{MinBytes: 1, MaxWait: time.Hour,
			Partitions: []broker.FetchPartition{{Topic: topic}}})
		if err != nil {
			errc <- err
			return
		}
		done <- res
	}
	go poll("gone")
	if err := b.DeleteTopic(context.Background(), "", "gone"); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		res.Release()
		if !errors.Is(res.Partitions[0].Err, broker.ErrUnknownTopic) {
			t.Fatalf("a long poll of a deleted topic: %+v, want ErrUnknownTopic", res.Partitions[0])
		}
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("a long poll did not end 30s after its topic was deleted")
	}

	go poll("t")
	b.Shutdown()
	select {
	case res := <-done:
		res.Release()
		if res.Partitions[0].Err != nil || res.Partitions[0].Records != 0 {
			t.Fatalf("a long poll at shutdown: %+v, want an empty answer", res.Partitions[0])
		}
	case err := <-errc:
		// Shutdown came before the fetch was admitted.
		if !errors.Is(err, kind.ErrShuttingDown) {
			t.Fatalf("a fetch at shutdown: %v, want kind.ErrShuttingDown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a long poll did not end 30s after Shutdown")
	}
}

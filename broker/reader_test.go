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

// produce appends one batch of vals to partition 0 of topic.
func produce(t *testing.T, b *broker.Broker, topic string, vals ...string) broker.ProduceResult {
	t.Helper()
	res, err := b.Produce(context.Background(), broker.ProduceRequest{Topic: topic, Batch: records(vals...)})
	if err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	return res
}

// closed reports whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A live-tail reader resolves its partition and share once, reads
// committed batches whole (at least one, over its share), reads nothing
// at the high watermark and fails past it, wakes at the next commit, and
// notices its topic's deletion and re-creation.
func TestReaderTailsAPartition(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	produce(t, b, "t", "a", "b")
	produce(t, b, "t", "c")

	r, err := b.OpenReader(ctx, "", "t", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.MaxBytes() != broker.DefaultFetchBytes || r.Name() != "t-0" {
		t.Fatalf("reader: share %d name %q, want %d and t-0 (as in the data directory)", r.MaxBytes(), r.Name(), broker.DefaultFetchBytes)
	}
	fp, err := r.Read(0, 1)
	if err != nil || fp.Records != 2 || fp.NextOffset != 2 || fp.HighWatermark != 3 || len(fp.Batches) == 0 {
		t.Fatalf("read 1 byte at 0: %+v %v, want the first batch whole (2 records, next 2, hw 3)", fp, err)
	}
	fp, err = r.Read(0, broker.DefaultFetchBytes)
	if err != nil || fp.Records != 3 || fp.NextOffset != 3 {
		t.Fatalf("read all at 0: records %d next %d %v, want 3 and 3", fp.Records, fp.NextOffset, err)
	}
	fp, err = r.Read(3, 1<<10)
	if err != nil || fp.Records != 0 || fp.Batches != nil || fp.NextOffset != 3 {
		t.Fatalf("read at the high watermark: %+v %v, want nothing and no error", fp, err)
	}
	var oor *log.OutOfRangeError
	if _, err := r.Read(4, 1<<10); !errors.As(err, &oor) || oor.HighWatermark != 3 {
		t.Fatalf("read past the high watermark: %v, want *OutOfRangeError at hw 3", err)
	}

	ch := r.Changed()
	if closed(ch) {
		t.Fatal("Changed is closed before any new commit")
	}
	produce(t, b, "t", "d")
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("Changed not closed 30s after a commit")
	}
	if fp, err := r.Read(3, 1<<10); err != nil || fp.Records != 1 || fp.NextOffset != 4 {
		t.Fatalf("read the new record: %+v %v", fp, err)
	}

	if err := r.StillServed(); err != nil {
		t.Fatalf("still served: %v", err)
	}
	if err := b.DeleteTopic(ctx, "", "t"); err != nil {
		t.Fatal(err)
	}
	if err := r.StillServed(); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("still served after delete: %v, want ErrUnknownTopic", err)
	}
	createTopic(t, b, "t", 1)
	if err := r.StillServed(); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("still served after delete and create: %v, want ErrUnknownTopic", err)
	}
	// Close twice: the broker is left once (a second leave would panic
	// the broker's wait group, and none would hang its Close).
	r.Close()
	r.Close()
}

// OpenReader checks what it is asked before it holds the broker: a bad
// share, a negative offset or an unknown topic is refused, and a share
// above MaxFetchBytes is capped.
func TestOpenReaderRefusals(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	r, err := b.OpenReader(ctx, "", "t", 0, 0, broker.MaxFetchBytes*4)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxBytes() != broker.MaxFetchBytes {
		t.Fatalf("share %d, want it capped at %d", r.MaxBytes(), broker.MaxFetchBytes)
	}
	r.Close()
	if _, err := b.OpenReader(ctx, "", "t", 0, 0, -1); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("negative share: %v, want kind.ErrInvalidArgument", err)
	}
	if _, err := b.OpenReader(ctx, "", "t", 0, -1, 0); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("negative offset: %v, want kind.ErrInvalidArgument", err)
	}
	if _, err := b.OpenReader(ctx, "", "nope", 0, 0, 0); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
	if _, err := b.OpenReader(ctx, "", "t", 7, 0, 0); err == nil {
		t.Fatal("partition 7 of a 1-partition topic: no error")
	}
	if _, err := b.Changed("nope", 0); err == nil {
		t.Fatal("Changed of an unknown topic: no error")
	}
	ch, err := b.Changed("t", 0)
	if err != nil || closed(ch) {
		t.Fatalf("Changed: %v, closed %v before a commit", err, closed(ch))
	}
	produce(t, b, "t", "x")
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("Changed not closed 30s after a commit")
	}
	// After Shutdown no reader opens.
	b.Shutdown()
	if _, err := b.OpenReader(ctx, "", "t", 0, 0, 0); !errors.Is(err, kind.ErrShuttingDown) {
		t.Fatalf("open after shutdown: %v, want kind.ErrShuttingDown", err)
	}
	if !closed(b.Done()) {
		t.Fatal("Done is not closed after Shutdown")
	}
}

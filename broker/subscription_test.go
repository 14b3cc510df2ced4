package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

// byteCost charges a message its batches' bytes, and reads what it is
// asked for.
type byteCost struct{}

func (byteCost) Charge(n int, _ bool) int64 { return int64(n) }
func (byteCost) Size(m int) int             { return m }

// A message read is charged to the subscriptions' budget until its
// stream says it is sent or idle: another subscription waits for that
// charge, and gets it once it is released.
func TestSubscriptionsHoldTheChargeOfAMessage(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 1)
	ctx := context.Background()
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a", "b")}); err != nil {
		t.Fatal(err)
	}
	// A budget smaller than any message's first ask: a read takes all of
	// it, then keeps what the batches it read cost.
	subs := broker.NewSubscriptions(4<<10, byteCost{})
	subscribe := func() *broker.Subscription {
		r, err := b.OpenReader(ctx, "", "t", 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return subs.Subscribe(r, false, 1<<20)
	}
	first, second := subscribe(), subscribe()
	fp, err := first.Next(ctx, 0)
	if err != nil || len(fp.Batches) == 0 {
		t.Fatalf("first read: %d bytes, %v", len(fp.Batches), err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := second.Next(wctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second read while the first message is charged: %v, want it to wait for budget", err)
	}
	first.Idle()
	if fp, err := second.Next(ctx, 0); err != nil || len(fp.Batches) == 0 {
		t.Fatalf("second read after the first released its charge: %d bytes, %v", len(fp.Batches), err)
	}
	second.Close()
	first.Close()
}

// Wait waits at the high watermark until a record is committed there,
// then returns it; waiting again, it ends with the broker's shutdown, and
// with its context.
func TestSubscriptionWaitsForRecords(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 1)
	ctx := context.Background()
	r, err := b.OpenReader(ctx, "", "t", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	sub := broker.NewSubscriptions(1<<20, byteCost{}).Subscribe(r, false, 1<<20)
	defer sub.Close()
	type read struct {
		fp  broker.FetchedPartition
		err error
	}
	wait := func(ctx context.Context, off int64) <-chan read {
		c := make(chan read, 1)
		go func() {
			fp, err := sub.Wait(ctx, off)
			c <- read{fp, err}
		}()
		return c
	}
	got := wait(ctx, 0)
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a")}); err != nil {
		t.Fatal(err)
	}
	first := <-got
	if first.err != nil || len(first.fp.Batches) == 0 || first.fp.NextOffset != 1 {
		t.Fatalf("wait at 0, then a record produced: %d bytes to %d, %v; want the record", len(first.fp.Batches), first.fp.NextOffset, first.err)
	}
	sub.Sent()
	cctx, cancel := context.WithCancel(ctx)
	got = wait(cctx, 1)
	cancel()
	if r := <-got; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("wait at the end, its context canceled: %d bytes, %v; want context.Canceled", len(r.fp.Batches), r.err)
	}
	got = wait(ctx, 1)
	b.Shutdown()
	if r := <-got; !errors.Is(r.err, kind.ErrShuttingDown) {
		t.Fatalf("wait at the end, the broker shut down: %d bytes, %v; want kind.ErrShuttingDown", len(r.fp.Batches), r.err)
	}
}

// JoinAssigned checks the request before it joins, and a lone member gets
// every partition of its topic.
func TestJoinAssigned(t *testing.T) {
	b := open(t)
	createTopic(t, b, "t", 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range []broker.AssignedJoin{
		{Topics: []string{"t"}},
		{Group: "g"},
		{Group: "g", Topics: []string{"t"}, SessionTimeout: -time.Second},
	} {
		if _, err := b.JoinAssigned(ctx, "", r); !errors.Is(err, kind.ErrInvalidArgument) {
			t.Fatalf("join %+v: %v, want an invalid argument", r, err)
		}
	}
	if _, err := b.JoinAssigned(ctx, "", broker.AssignedJoin{Group: "g", Topics: []string{"nope"}}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("a new member naming no topic that exists: %v, want ErrUnknownTopic", err)
	}
	a, err := b.JoinAssigned(ctx, "", broker.AssignedJoin{Group: "g", Topics: []string{"t", "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []groups.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}
	if a.MemberID == "" || len(a.Partitions) != 2 || a.Partitions[0] != want[0] || a.Partitions[1] != want[1] {
		t.Fatalf("lone member: %+v, want an id and %v", a, want)
	}
	if a.SessionTimeout != 10*time.Second {
		t.Fatalf("session timeout %v, want the default 10s", a.SessionTimeout)
	}
}

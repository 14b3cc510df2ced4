package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

// checkNoLeaks fails the test when goroutines started during it are still
// running after cleanup (Close must stop everything).
func checkNoLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// dialFake starts a fake node and a Client of it, closed at cleanup.
func dialFake(t *testing.T) (*fakeServer, *Client) {
	t.Helper()
	checkNoLeaks(t)
	f := startFake(t)
	c, err := Dial(f.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return f, c
}

func TestProducerRoutesKeyedRecordsAndBatches(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("orders", 3)
	p := c.NewProducer(ProducerOptions{Linger: 20 * time.Millisecond})
	ctx := context.Background()
	var futures []*Future
	const n = 600
	for i := range n {
		key := fmt.Sprintf("key-%d", i%17)
		futures = append(futures, p.Produce(ctx, Record{Topic: "orders", Key: []byte(key), Value: []byte(fmt.Sprint(i))}))
	}
	for i, fu := range futures {
		ack, err := fu.Get(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		want := routing.ForKey([]byte(fmt.Sprintf("key-%d", i%17)), 3)
		if ack.Partition != want {
			t.Fatalf("record %d went to partition %d, want %d", i, ack.Partition, want)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Every record is there once, and each key's records are in produce order.
	total := 0
	for part := int32(0); part < 3; part++ {
		last := map[string]int{}
		for i, r := range f.records(t, "orders", part) {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", part, i, r.Offset)
			}
			v := 0
			fmt.Sscan(string(r.Value), &v)
			if prev, ok := last[string(r.Key)]; ok && v <= prev {
				t.Fatalf("key %s: value %d after %d", r.Key, v, prev)
			}
			last[string(r.Key)] = v
			total++
		}
	}
	if total != n {
		t.Fatalf("%d records stored, want %d", total, n)
	}
	if f.produces >= n/10 {
		t.Fatalf("%d produce requests for %d records: not batching", f.produces, n)
	}
}

func TestProducerUnkeyedRecordsSpreadInStickyBatches(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("logs", 4)
	p := c.NewProducer(ProducerOptions{Linger: -1})
	defer p.Close()
	ctx := context.Background()
	used := map[int32]int{}
	for i := range 200 {
		ack, err := p.Produce(ctx, Record{Topic: "logs", Value: []byte(fmt.Sprint(i))}).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		used[ack.Partition]++
	}
	if len(used) != 4 {
		t.Fatalf("unkeyed records used partitions %v, want all 4", used)
	}
}

func TestProducerExplicitPartitionAndBadInput(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 2)
	p := c.NewProducer(ProducerOptions{MaxBatchBytes: 1024})
	defer p.Close()
	ctx := context.Background()
	ack, err := p.Produce(ctx, Record{Topic: "t", Partition: ToPartition(1), Key: []byte("k")}).Get(ctx)
	if err != nil || ack.Partition != 1 || ack.Offset != 0 {
		t.Fatalf("explicit partition: %+v %v", ack, err)
	}
	if _, err := p.Produce(ctx, Record{Topic: "t", Partition: ToPartition(2)}).Get(ctx); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("partition 2 of 2: err %v, want ErrInvalidRecord", err)
	}
	if _, err := p.Produce(ctx, Record{Topic: "t", Value: make([]byte, 2000)}).Get(ctx); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("oversized record: err %v, want ErrRecordTooLarge", err)
	}
	if _, err := p.Produce(ctx, Record{Topic: "missing"}).Get(ctx); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown topic: err %v, want NOT_FOUND", err)
	}
}

// A batch appended whose answer was lost is resent with the same producer id
// and sequence: the server answers "duplicate", nothing is stored twice.
func TestProducerRetryAfterLostAnswerDoesNotDuplicate(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("pay", 1)
	lost := 0
	f.afterAppend = func(req *logdv1.ProduceRequest) error {
		if lost < 3 {
			lost++
			return status.Error(codes.Unavailable, "connection reset")
		}
		return nil
	}
	p := c.NewProducer(ProducerOptions{RetryBackoff: time.Millisecond})
	ctx := context.Background()
	var futures []*Future
	for i := range 50 {
		futures = append(futures, p.Produce(ctx, Record{Topic: "pay", Value: []byte(fmt.Sprint(i))}))
		if i%10 == 9 {
			p.Flush(ctx)
		}
	}
	dups := 0
	for i, fu := range futures {
		ack, err := fu.Get(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if ack.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, ack.Offset)
		}
		if ack.Duplicate {
			dups++
		}
	}
	p.Close()
	recs := f.records(t, "pay", 0)
	if len(recs) != 50 {
		t.Fatalf("%d records stored, want 50", len(recs))
	}
	for i, r := range recs {
		if string(r.Value) != fmt.Sprint(i) {
			t.Fatalf("offset %d holds %q", i, r.Value)
		}
	}
	if dups == 0 {
		t.Fatal("no acknowledgement was marked duplicate")
	}
}

// Random failures before and after appending, on many partitions: every
// record is stored exactly once, in produce order per partition.
func TestProducerKeepsOrderUnderRandomFailures(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("ev", 4)
	rng := rand.New(rand.NewPCG(1, 2))
	var rmu sync.Mutex
	flaky := func(req *logdv1.ProduceRequest) error {
		rmu.Lock()
		defer rmu.Unlock()
		if rng.IntN(4) == 0 {
			return status.Error(codes.Unavailable, "flaky")
		}
		return nil
	}
	f.beforeAppend, f.afterAppend = flaky, flaky
	p := c.NewProducer(ProducerOptions{Linger: time.Millisecond, RetryBackoff: time.Millisecond, MaxBatchBytes: 2048})
	ctx := context.Background()
	var futures []*Future
	for i := range 2000 {
		key := fmt.Sprintf("k%d", i%40)
		futures = append(futures, p.Produce(ctx, Record{Topic: "ev", Key: []byte(key), Value: []byte(fmt.Sprint(i))}))
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, fu := range futures {
		if _, err := fu.Get(ctx); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	p.Close()
	total := 0
	for part := int32(0); part < 4; part++ {
		prev := -1
		for _, r := range f.records(t, "ev", part) {
			var v int
			fmt.Sscan(string(r.Value), &v)
			if v <= prev {
				t.Fatalf("partition %d: %d stored after %d (duplicate or reordered)", part, v, prev)
			}
			prev = v
			total++
		}
	}
	if total != 2000 {
		t.Fatalf("%d records stored, want 2000", total)
	}
}

// Out-of-order answers (an earlier batch is not there yet, say after a
// leader change) are retried with the same bytes.
func TestProducerRetriesOutOfOrderSequence(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	n := 0
	f.beforeAppend = func(req *logdv1.ProduceRequest) error {
		if n++; n == 2 {
			return status.Error(codes.FailedPrecondition, "out of order sequence")
		}
		return nil
	}
	p := c.NewProducer(ProducerOptions{Linger: -1, RetryBackoff: time.Millisecond})
	defer p.Close()
	ctx := context.Background()
	for i := range 3 {
		if ack, err := p.Produce(ctx, Record{Topic: "t", Value: []byte("v")}).Get(ctx); err != nil || ack.Offset != int64(i) {
			t.Fatalf("record %d: %+v %v", i, ack, err)
		}
	}
}

// A permanent failure fails the batch's records and the next batches still
// go through (the partition's sequence does not jam).
func TestProducerPermanentFailureDoesNotJamPartition(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	n := 0
	f.beforeAppend = func(req *logdv1.ProduceRequest) error {
		if n++; n == 2 {
			return status.Error(codes.InvalidArgument, "bad")
		}
		return nil
	}
	p := c.NewProducer(ProducerOptions{Linger: -1})
	defer p.Close()
	ctx := context.Background()
	for i, wantErr := range []bool{false, true, false, false} {
		_, err := p.Produce(ctx, Record{Topic: "t", Value: []byte("v")}).Get(ctx)
		if (err != nil) != wantErr {
			t.Fatalf("record %d: err %v, want error %v", i, err, wantErr)
		}
	}
	if got := len(f.records(t, "t", 0)); got != 3 {
		t.Fatalf("%d records stored, want 3", got)
	}
}

func TestProducerDeliveryTimeout(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	f.beforeAppend = func(*logdv1.ProduceRequest) error { return status.Error(codes.Unavailable, "down") }
	p := c.NewProducer(ProducerOptions{DeliveryTimeout: 100 * time.Millisecond, RetryBackoff: 10 * time.Millisecond})
	defer p.Close()
	ctx := context.Background()
	_, err := p.Produce(ctx, Record{Topic: "t", Value: []byte("v")}).Get(ctx)
	if c := status.Code(err); (c != codes.Unavailable && c != codes.DeadlineExceeded) || !strings.Contains(err.Error(), "not acknowledged within the delivery timeout (100ms)") {
		t.Fatalf("err %v, want UNAVAILABLE or DEADLINE_EXCEEDED after the delivery timeout", err)
	}
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Errorf("err %v: want it to match ErrDeliveryTimeout", err)
	}
	// The last attempt's answer is kept when there was one; on a loaded
	// machine the timeout may instead cut the first attempt short
	// (DEADLINE_EXCEEDED, no answer to keep).
	if status.Code(err) == codes.Unavailable && !errors.Is(err, ErrUnavailable) {
		t.Errorf("err %v: want it to match the last attempt's ErrUnavailable", err)
	}
}

func TestProducerBackpressure(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	gate := make(chan struct{})
	f.gate = gate
	ctx := context.Background()
	val := make([]byte, 1000)

	// FailWhenFull: once the buffer holds MaxBufferedBytes, Produce fails.
	p := c.NewProducer(ProducerOptions{MaxBatchBytes: 4096, MaxBufferedBytes: 8192, FailWhenFull: true, Linger: -1})
	var accepted []*Future
	var full error
	for range 20 {
		fu := p.Produce(ctx, Record{Topic: "t", Value: val})
		select {
		case <-fu.Done():
			_, full = fu.Get(ctx)
		default:
			accepted = append(accepted, fu)
		}
		if full != nil {
			break
		}
	}
	if !errors.Is(full, ErrBufferFull) {
		t.Fatalf("err %v, want ErrBufferFull", full)
	}
	if len(accepted) < 4 || len(accepted) > 8 {
		t.Fatalf("%d records of ~1 KiB accepted in an 8 KiB buffer", len(accepted))
	}

	// Blocking (the default): Produce waits for room, bounded by its ctx.
	pb := c.NewProducer(ProducerOptions{MaxBatchBytes: 4096, MaxBufferedBytes: 8192, Linger: -1})
	for range 7 {
		pb.Produce(ctx, Record{Topic: "t", Value: val})
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := pb.Produce(short, Record{Topic: "t", Value: val}).Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked produce: err %v, want its context's deadline", err)
	}
	done := make(chan *Future)
	go func() { done <- pb.Produce(ctx, Record{Topic: "t", Value: val}) }()
	select {
	case <-done:
		t.Fatal("Produce returned while the buffer was full")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate) // the server answers: room frees up
	fu := <-done
	if _, err := fu.Get(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range accepted {
		if _, err := a.Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	pb.Close()
}

func TestProducerCallbackAndClose(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 2)
	p := c.NewProducer(ProducerOptions{Linger: time.Hour})
	var mu sync.Mutex
	var acks []Ack
	for i := range 10 {
		p.ProduceFunc(context.Background(), Record{Topic: "t", Key: []byte(fmt.Sprint(i))}, func(a Ack, err error) {
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			acks = append(acks, a)
			mu.Unlock()
		})
	}
	// Close sends what lingers and waits for it.
	p.Close()
	if len(acks) != 10 {
		t.Fatalf("%d callbacks after Close, want 10", len(acks))
	}
	if _, err := p.Produce(context.Background(), Record{Topic: "t"}).Get(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("produce after Close: %v, want ErrClosed", err)
	}
}

func TestFollowsLeaderRedirect(t *testing.T) {
	checkNoLeaks(t)
	leader := startFake(t)
	follower := startFake(t)
	leader.createTopic("t", 1)
	follower.createTopic("t", 1)
	follower.leader = leader.addr
	c, err := Dial(follower.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	p := c.NewProducer(ProducerOptions{Linger: -1})
	for i := range 5 {
		ack, err := p.Produce(ctx, Record{Topic: "t", Value: []byte(fmt.Sprint(i))}).Get(ctx)
		if err != nil || ack.Offset != int64(i) {
			t.Fatalf("record %d: %+v %v", i, ack, err)
		}
	}
	p.Close()
	if got := len(leader.records(t, "t", 0)); got != 5 {
		t.Fatalf("leader holds %d records, want 5", got)
	}
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	recs, err := cons.Poll(ctx)
	if err != nil || len(recs) != 5 {
		t.Fatalf("poll through a follower: %d records, %v", len(recs), err)
	}
}

func TestProducerCloseContextAborts(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	f.beforeAppend = func(*logdv1.ProduceRequest) error { return status.Error(codes.Unavailable, "down") }
	p := c.NewProducer(ProducerOptions{RetryBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	fu := p.Produce(ctx, Record{Topic: "t", Value: []byte("v")})
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.CloseContext(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CloseContext: %v, want its deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("CloseContext took %v", d)
	}
	if _, err := fu.Get(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("record after abort: %v, want ErrClosed", err)
	}
}

// A broken ProduceStream (or a server without one) does not lose records:
// they are retried as unary produces, once.
func TestProducerSurvivesBrokenStream(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.Unimplemented} {
		t.Run(code.String(), func(t *testing.T) {
			f, c := dialFake(t)
			f.createTopic("t", 2)
			f.streamFails = status.Error(code, "stream broke")
			p := c.NewProducer(ProducerOptions{RetryBackoff: time.Millisecond})
			ctx := context.Background()
			var fs []*Future
			for i := range 20 {
				fs = append(fs, p.Produce(ctx, Record{Topic: "t", Key: []byte(fmt.Sprint(i)), Value: []byte("v")}))
			}
			for i, fu := range fs {
				if _, err := fu.Get(ctx); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			p.Close()
			if n := len(f.records(t, "t", 0)) + len(f.records(t, "t", 1)); n != 20 {
				t.Fatalf("%d records stored, want 20", n)
			}
		})
	}
}

// The leader a partition was redirected to goes away: the producer and the
// consumer go back to the bootstrap node, which names the new leader.
func TestFollowsLeaderChange(t *testing.T) {
	checkNoLeaks(t)
	boot, oldLeader, newLeader := startFake(t), startFake(t), startFake(t)
	for _, f := range []*fakeServer{boot, oldLeader, newLeader} {
		f.createTopic("t", 1)
	}
	boot.leader = oldLeader.addr
	c, err := Dial(boot.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	p := c.NewProducer(ProducerOptions{Linger: -1, RetryBackoff: 5 * time.Millisecond})
	defer p.Close()
	if _, err := p.Produce(ctx, Record{Topic: "t", Value: []byte("a")}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Follow: true, MaxWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if recs, err := cons.Poll(ctx); err != nil || len(recs) != 1 {
		t.Fatalf("poll from the old leader: %v %v", recs, err)
	}

	oldLeader.gs.Stop()
	boot.mu.Lock()
	boot.leader = newLeader.addr
	boot.mu.Unlock()
	if _, err := p.Produce(ctx, Record{Topic: "t", Value: []byte("b")}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if got := newLeader.records(t, "t", 0); len(got) != 1 || string(got[0].Value) != "b" {
		t.Fatalf("new leader holds %v", got)
	}
	// The consumer's position (1) is past the new leader's log (1 record at
	// offset 0); seek to its start to read what it has.
	var recs []ConsumedRecord
	for i := 0; i < 20 && len(recs) == 0; i++ {
		cons.SeekPartition(ctx, 0, AtOffset(0))
		recs, err = cons.Poll(ctx)
	}
	if len(recs) != 1 || string(recs[0].Value) != "b" {
		t.Fatalf("poll after the leader changed: %v %v", recs, err)
	}
}

// With several seed addresses, a dead one is skipped.
func TestDialSeveralSeeds(t *testing.T) {
	checkNoLeaks(t)
	f := startFake(t)
	f.createTopic("t", 1)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	c, err := Dial(deadAddr + ", " + f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	p := c.NewProducer(ProducerOptions{Linger: -1})
	for i := range 3 {
		if _, err := p.Produce(ctx, Record{Topic: "t", Value: []byte(fmt.Sprint(i))}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if recs, err := cons.Poll(ctx); err != nil || len(recs) != 3 {
		t.Fatalf("%v %v", recs, err)
	}
	if _, err := Dial(" , "); err == nil {
		t.Fatal("Dial of no address succeeded")
	}
}

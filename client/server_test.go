package client_test

// End-to-end tests against a real in-process node (nodetest).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/routing"
)

func dialServer(t *testing.T, mutate ...func(*node.Config)) (*client.Client, *node.Node) {
	t.Helper()
	s := nodetest.Start(t, mutate...)
	c, err := client.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, s
}

func readAll(t *testing.T, c *client.Client, opts client.ConsumerOptions) []client.ConsumedRecord {
	t.Helper()
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var out []client.ConsumedRecord
	for {
		recs, err := cons.Poll(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
}

func TestServerProduceConsumeKeyedInOrder(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{MaxBatchBytes: 16 << 10})
	const n = 3000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		p.ProduceFunc(ctx, client.Record{Topic: "orders", Key: []byte(fmt.Sprintf("user-%d", i%25)), Value: []byte(fmt.Sprint(i))},
			func(_ client.Ack, err error) {
				if err != nil {
					errs <- err
				}
				wg.Done()
			})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	p.Close()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs := readAll(t, c, client.ConsumerOptions{Topic: "orders"})
	if len(recs) != n {
		t.Fatalf("read %d records, want %d", len(recs), n)
	}
	last := map[string]int{}
	for _, r := range recs {
		if want := routing.ForKey(r.Key, 3); r.Partition != want {
			t.Fatalf("key %s in partition %d, want %d", r.Key, r.Partition, want)
		}
		var v int
		fmt.Sscan(string(r.Value), &v)
		if prev, ok := last[string(r.Key)]; ok && v <= prev {
			t.Fatalf("key %s: %d read after %d", r.Key, v, prev)
		}
		last[string(r.Key)] = v
	}
}

func TestServerSeekByTimeAndOffset(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	p := c.NewProducer(client.ProducerOptions{})
	for i := range 10 {
		p.Produce(ctx, client.Record{Topic: "t", Value: []byte(fmt.Sprint(i)), Timestamp: t0.Add(time.Duration(i) * time.Minute)})
	}
	p.Close()
	recs := readAll(t, c, client.ConsumerOptions{Topic: "t", Start: client.AtTime(t0.Add(4*time.Minute + time.Second))})
	if len(recs) != 5 || recs[0].Offset != 5 {
		t.Fatalf("from a time: %d records starting at %v", len(recs), recs)
	}
	if !recs[0].Timestamp.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("timestamp %v, want %v", recs[0].Timestamp, t0.Add(5*time.Minute))
	}
	recs = readAll(t, c, client.ConsumerOptions{Topic: "t", Start: client.AtOffset(8)})
	if len(recs) != 2 || string(recs[0].Value) != "8" {
		t.Fatalf("from offset 8: %v", recs)
	}
	if recs := readAll(t, c, client.ConsumerOptions{Topic: "t", Start: client.Latest()}); len(recs) != 0 {
		t.Fatalf("from latest: %d records", len(recs))
	}
}

func TestServerGroupCommitAndResume(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for i := range 20 {
		p.Produce(ctx, client.Record{Topic: "t", Partition: client.ToPartition(int32(i % 2)), Value: []byte(fmt.Sprint(i))})
	}
	p.Close()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "t", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.CommitOffsets(ctx, map[int32]int64{0: 4, 1: 7}); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	offs, err := c.Admin().FetchOffsets(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		want := map[int32]int64{0: 4, 1: 7}[o.Partition]
		if o.Offset != want || o.HighWatermark != 10 || o.Lag != 10-want {
			t.Fatalf("%+v: want offset %d, high watermark 10, lag %d", o, want, 10-want)
		}
	}
	recs := readAll(t, c, client.ConsumerOptions{Topic: "t", Group: "g"})
	if len(recs) != (10-4)+(10-7) {
		t.Fatalf("resumed and read %d records, want 9", len(recs))
	}
	// Reset by time: everything is newer than an hour ago.
	if _, err := c.Admin().ResetOffsets(ctx, "g", "t", client.AllPartitions, client.AtTime(time.Now().Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, c, client.ConsumerOptions{Topic: "t", Group: "g"}); len(recs) != 20 {
		t.Fatalf("after reset: %d records, want 20", len(recs))
	}
	groups, err := c.Admin().ListGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0] != "g" {
		t.Fatalf("groups %v, %v", groups, err)
	}
}

func TestServerUnknownTopicAndBadPartition(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	if _, err := p.Produce(ctx, client.Record{Topic: "nope"}).Get(ctx); err == nil {
		t.Fatal("produce to an unknown topic succeeded")
	}
	if _, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "nope"}); err == nil {
		t.Fatal("consume of an unknown topic succeeded")
	}
	if _, err := c.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(ctx, client.Record{Topic: "t", Partition: client.ToPartition(3)}).Get(ctx); !errors.Is(err, client.ErrInvalidRecord) {
		t.Fatalf("partition 3 of 1: %v", err)
	}
}

func TestServerProducerCloseLeavesNothingRunning(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{Linger: time.Hour})
	var fs []*client.Future
	for i := range 100 {
		fs = append(fs, p.Produce(ctx, client.Record{Topic: "t", Key: []byte(fmt.Sprint(i))}))
	}
	p.Close() // flushes the lingering batches
	for _, f := range fs {
		select {
		case <-f.Done():
		default:
			t.Fatal("a record is still pending after Close")
		}
	}
	d, err := c.Admin().DescribeTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range d.Partitions {
		total += p.HighWatermark
	}
	if total != 100 {
		t.Fatalf("%d records stored, want 100", total)
	}
	_ = s
}

func TestServerOutOfRangeAfterRetention(t *testing.T) {
	c, _ := dialServer(t, func(cfg *node.Config) { cfg.RetentionInterval = 50 * time.Millisecond })
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "r", client.TopicOptions{Partitions: 1, Config: client.TopicConfig{SegmentBytes: 4096}}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{Linger: -1, MaxBatchBytes: 2048})
	for range 100 {
		p.Produce(ctx, client.Record{Topic: "r", Value: make([]byte, 500)})
	}
	p.Close()
	if _, err := c.Admin().AlterTopic(ctx, "r", client.TopicConfig{RetentionRecords: 10}); err != nil {
		t.Fatal(err)
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "r", Start: client.AtOffset(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = cons.Poll(ctx)
		if err != nil || time.Now().After(deadline) {
			break
		}
		cons.SeekPartition(ctx, 0, client.AtOffset(0))
		time.Sleep(20 * time.Millisecond)
	}
	var oor *client.OutOfRangeError
	if !errors.As(err, &oor) || oor.Offset != 0 || oor.LogStartOffset <= 0 || oor.HighWatermark != 100 {
		t.Fatalf("err %v (%+v), want *OutOfRangeError at 0 with the new log start and high watermark 100", err, oor)
	}
	if err := cons.SeekPartition(ctx, 0, client.Earliest()); err != nil {
		t.Fatal(err)
	}
	if pos, _ := cons.Position(0); pos != oor.LogStartOffset {
		t.Fatalf("earliest is %d, want the log start %d", pos, oor.LogStartOffset)
	}
}

func TestServerHeadersAndTimestampsRoundTrip(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "h", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1_700_000_000_123)
	p := c.NewProducer(client.ProducerOptions{})
	ack, err := p.Produce(ctx, client.Record{Topic: "h", Key: []byte("k"), Value: []byte{0, 1, 2},
		Headers: []client.Header{{Key: "trace", Value: []byte("t1")}, {Key: "empty"}}, Timestamp: ts}).Get(ctx)
	p.Close()
	if err != nil || !ack.Timestamp.Equal(ts) {
		t.Fatalf("%+v %v", ack, err)
	}
	recs := readAll(t, c, client.ConsumerOptions{Topic: "h"})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if string(r.Key) != "k" || string(r.Value) != "\x00\x01\x02" || !r.Timestamp.Equal(ts) ||
		len(r.Headers) != 2 || r.Headers[0].Key != "trace" || string(r.Headers[0].Value) != "t1" || r.Headers[1].Key != "empty" {
		t.Fatalf("read back %+v", r)
	}
}

package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// fill produces n records "0".."n-1" to topic's partition p, timestamps one
// second apart from t0.
func fill(t *testing.T, c *Client, topic string, p int32, n int, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	pr := c.NewProducer(ProducerOptions{})
	defer pr.Close()
	var fs []*Future
	for i := range n {
		fs = append(fs, pr.Produce(ctx, Record{Topic: topic, Partition: ToPartition(p), Key: []byte("k"),
			Value: []byte(fmt.Sprint(i)), Timestamp: t0.Add(time.Duration(i) * time.Second)}))
	}
	for _, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// drain polls until io.EOF.
func drain(t *testing.T, cons *Consumer) []ConsumedRecord {
	t.Helper()
	var out []ConsumedRecord
	for {
		recs, err := cons.Poll(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
}

func TestConsumerReadsToEndAcrossPartitions(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 3)
	t0 := time.UnixMilli(1_700_000_000_000)
	for p := range int32(3) {
		fill(t, c, "t", p, 10+int(p), t0)
	}
	cons, err := c.NewConsumer(context.Background(), ConsumerOptions{Topic: "t", MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	// Records produced after the consumer started are past its end.
	fill(t, c, "t", 0, 5, t0)
	recs := drain(t, cons)
	next := map[int32]int64{}
	for _, r := range recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}
	if next[0] != 10 || next[1] != 11 || next[2] != 12 {
		t.Fatalf("read up to %v, want 10, 11, 12", next)
	}
}

func TestConsumerSeek(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	t0 := time.UnixMilli(1_700_000_000_000)
	fill(t, c, "t", 0, 20, t0)
	ctx := context.Background()
	for _, tc := range []struct {
		pos  Position
		want int64 // first offset read; 20: none
	}{
		{Earliest(), 0},
		{Latest(), 20},
		{AtOffset(7), 7},
		{AtTime(t0.Add(12 * time.Second)), 12},
		{AtTime(t0.Add(12500 * time.Millisecond)), 13},
		{AtTime(t0.Add(time.Hour)), 20},
	} {
		cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Start: tc.pos})
		if err != nil {
			t.Fatal(err)
		}
		recs := drain(t, cons)
		cons.Close()
		if int64(len(recs)) != 20-tc.want || (len(recs) > 0 && recs[0].Offset != tc.want) {
			t.Errorf("%s: read %d records from %v, want from %d", tc.pos, len(recs), recs, tc.want)
		}
	}
}

func TestConsumerOutOfRangeIsTyped(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	fill(t, c, "t", 0, 10, time.Now())
	f.mu.Lock()
	f.topics["t"][0].logStart = 4 // trimmed by retention
	f.mu.Unlock()
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Start: AtOffset(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	_, err = cons.Poll(ctx)
	var oor *OutOfRangeError
	if !errors.As(err, &oor) || !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("err %v, want *OutOfRangeError", err)
	}
	if oor.Offset != 2 || oor.LogStartOffset != 4 || oor.HighWatermark != 10 || oor.Partition != 0 {
		t.Fatalf("%+v", *oor)
	}
	if err := cons.SeekPartition(ctx, 0, AtOffset(oor.LogStartOffset)); err != nil {
		t.Fatal(err)
	}
	if recs := drain(t, cons); len(recs) != 6 || recs[0].Offset != 4 {
		t.Fatalf("after seeking to the log start: %d records", len(recs))
	}
}

func TestConsumerGroupCommit(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 2)
	fill(t, c, "t", 0, 10, time.Now())
	fill(t, c, "t", 1, 3, time.Now())
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Group: "g", Partitions: []int32{0}})
	if err != nil {
		t.Fatal(err)
	}
	recs := drain(t, cons)
	if len(recs) != 10 {
		t.Fatalf("%d records", len(recs))
	}
	if err := cons.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	if got := f.committed("g", "t", 0); got != 10 {
		t.Fatalf("committed %d, want 10", got)
	}
	if got := f.committed("g", "t", 1); got != -1 {
		t.Fatalf("partition 1 committed %d without being read", got)
	}

	// The group resumes where it committed; explicit offsets commit as given.
	fill(t, c, "t", 0, 2, time.Now())
	cons, err = c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if pos, _ := cons.Position(0); pos != 10 {
		t.Fatalf("resumed at %d, want 10", pos)
	}
	if pos, _ := cons.Position(1); pos != 0 {
		t.Fatalf("partition without a commit starts at %d, want earliest", pos)
	}
	if err := cons.CommitOffsets(ctx, map[int32]int64{1: 2}); err != nil {
		t.Fatal(err)
	}
	if got := f.committed("g", "t", 1); got != 2 {
		t.Fatalf("committed %d, want 2", got)
	}
}

func TestConsumerFollowWaitsForNewRecords(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 2)
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Follow: true, MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	go func() {
		time.Sleep(100 * time.Millisecond)
		fill(t, c, "t", 1, 1, time.Now())
	}()
	start := time.Now()
	recs, err := cons.Poll(ctx)
	if err != nil || len(recs) != 1 || recs[0].Partition != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Poll took %v: it did not return on the first partition's records", d)
	}
	// Nothing new: Poll returns empty after MaxWait, not io.EOF.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cons.opts.MaxWait = 50 * time.Millisecond
	if recs, err := cons.Poll(short); err != nil || len(recs) != 0 {
		t.Fatalf("%v %v", recs, err)
	}
}

func TestConsumerCloseInterruptsPoll(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t", Follow: true, MaxWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		cons.Close()
	}()
	start := time.Now()
	cons.Poll(ctx)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Poll returned %v after Close", d)
	}
	if _, err := cons.Poll(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
}

// TestConsumerSkipsACorruptBatch: a stored batch that does not decode costs
// the consumer its own records only: Poll returns the records before it,
// then a *CorruptBatchError naming its offsets, and after SeekPartition
// past it the records after it (issue 17 item 1).
func TestConsumerSkipsACorruptBatch(t *testing.T) {
	f, c := dialFake(t)
	f.createTopic("t", 1)
	fill(t, c, "t", 0, 2, time.Now())
	// A batch at offsets 2 to 3 whose record lengths lie, CRC right.
	bad := batch.Encode(nil, 2, batch.NoProducer, []batch.Record{{Value: []byte("x")}, {Value: []byte("y")}})
	bad[batch.HeaderSize] = 0x7e
	binary.BigEndian.PutUint32(bad[17:], batch.Checksum(bad))
	f.mu.Lock()
	p := f.topics["t"][0]
	p.batches = append(p.batches, bad, batch.Encode(nil, 4, batch.NoProducer, []batch.Record{{Value: []byte("z")}}))
	p.hw = 5
	f.mu.Unlock()
	ctx := context.Background()
	cons, err := c.NewConsumer(ctx, ConsumerOptions{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []ConsumedRecord
	var cerr *CorruptBatchError
	for !errors.As(err, &cerr) {
		var recs []ConsumedRecord
		recs, err = cons.Poll(ctx)
		if err != nil && !errors.As(err, &cerr) {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	if len(got) != 2 || cerr.FirstOffset != 2 || cerr.LastOffset != 3 || !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("%d records before %v, want 2 and offsets 2 to 3", len(got), err)
	}
	if err := cons.SeekPartition(ctx, 0, AtOffset(cerr.LastOffset+1)); err != nil {
		t.Fatal(err)
	}
	if recs := drain(t, cons); len(recs) != 1 || string(recs[0].Value) != "z" {
		t.Fatalf("after the bad batch: %v", recs)
	}
}

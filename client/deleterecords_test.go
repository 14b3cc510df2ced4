package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/logd/logd/client"
)

// TestServerDeleteRecords trims a partition through Admin.DeleteRecords:
// the new log start is the first offset read from the earliest position, a
// read below it is out of range, an offset at or below it changes nothing,
// ToHighWatermark empties the partition and an offset past the end fails.
func TestServerDeleteRecords(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	admin := c.Admin()
	if _, err := admin.CreateTopic(ctx, "t", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	for range 10 {
		p.Produce(ctx, client.Record{Topic: "t", Partition: client.ToPartition(1), Value: []byte("v")})
	}
	p.Close()
	start, err := admin.DeleteRecords(ctx, "t", 1, 4)
	if err != nil || start != 4 {
		t.Fatalf("delete below 4: start %d, %v; want 4", start, err)
	}
	recs := readAll(t, c, client.ConsumerOptions{Topic: "t", Partitions: []int32{1}, Start: client.Earliest()})
	if len(recs) != 6 || recs[0].Offset != 4 {
		t.Fatalf("read %d records from earliest, first %v; want 6 from offset 4", len(recs), recs)
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "t", Partitions: []int32{1}, Start: client.AtOffset(3)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cons.Poll(ctx)
	cons.Close()
	var oor *client.OutOfRangeError
	if !errors.As(err, &oor) || oor.Offset != 3 || oor.LogStartOffset != 4 || oor.HighWatermark != 10 {
		t.Fatalf("read at 3: %v, want *OutOfRangeError with log start 4", err)
	}
	if start, err := admin.DeleteRecords(ctx, "t", 1, 2); err != nil || start != 4 {
		t.Fatalf("delete below 2 after 4: start %d, %v; want 4 unchanged", start, err)
	}
	if start, err := admin.DeleteRecords(ctx, "t", 1, client.ToHighWatermark); err != nil || start != 10 {
		t.Fatalf("delete to the high watermark: start %d, %v; want 10", start, err)
	}
	if _, err := admin.DeleteRecords(ctx, "t", 1, 11); !errors.Is(err, client.ErrOffsetOutOfRange) {
		t.Fatalf("delete past the end: %v, want ErrOffsetOutOfRange", err)
	}
	if _, err := admin.DeleteRecords(ctx, "t", 2, 0); !errors.Is(err, client.ErrPartitionNotFound) {
		t.Fatalf("delete in partition 2 of 2: %v, want ErrPartitionNotFound", err)
	}
	d, err := admin.DescribeTopic(ctx, "t")
	if err != nil || d.Partitions[0].LogStartOffset != 0 || d.Partitions[1].LogStartOffset != 10 {
		t.Fatalf("describe: %+v %v; want partition 0 untouched, 1 starting at 10", d.Partitions, err)
	}
}

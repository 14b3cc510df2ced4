package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

func plain(keys ...string) []broker.Record {
	out := make([]broker.Record, len(keys))
	for i, k := range keys {
		out[i] = broker.Record{Partition: broker.AnyPartition, Value: []byte(fmt.Sprint("v", i))}
		if k != "" {
			out[i].Key = []byte(k)
		}
	}
	return out
}

// TestProduceRecordsRoutes: a named partition wins, a keyed record lands
// in its key's partition, the request's unkeyed records share one
// partition, and each partition's answer lists its records in order with
// consecutive offsets.
func TestProduceRecordsRoutes(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 4)
	recs := plain("a", "", "b", "", "c", "a", "")
	recs[6].Partition = 3
	writes, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "t", Records: recs, ProducerID: -1})
	if err != nil {
		t.Fatal(err)
	}
	where := map[int]int32{}
	for i, w := range writes {
		if w.Err != nil {
			t.Fatalf("partition %d: %v", w.Partition, w.Err)
		}
		if i > 0 && writes[i-1].Partition >= w.Partition {
			t.Fatalf("answers not in partition order: %d then %d", writes[i-1].Partition, w.Partition)
		}
		if got := w.Result.LastOffset - w.Result.BaseOffset + 1; got != int64(len(w.Records)) {
			t.Errorf("partition %d: %d offsets for %d records", w.Partition, got, len(w.Records))
		}
		for _, j := range w.Records {
			where[j] = w.Partition
		}
	}
	if len(where) != len(recs) {
		t.Fatalf("%d of %d records answered", len(where), len(recs))
	}
	for i, r := range recs {
		switch {
		case r.Partition >= 0:
			if where[i] != r.Partition {
				t.Errorf("record %d names partition %d, went to %d", i, r.Partition, where[i])
			}
		case r.Key != nil:
			if want := routing.ForKey(r.Key, 4); where[i] != want {
				t.Errorf("record %d (key %q) went to %d, its key hashes to %d", i, r.Key, where[i], want)
			}
		}
	}
	if where[1] != where[3] {
		t.Errorf("the unkeyed records of one request went to partitions %d and %d", where[1], where[3])
	}
}

// TestProduceRecordsIdempotent: with a producer id the unkeyed records go
// to the partition the id names, and the same request again is answered
// as a duplicate with the first offsets.
func TestProduceRecordsIdempotent(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 3)
	req := broker.RecordsRequest{Topic: "t", Records: plain("", ""), ProducerID: 7}
	first, err := b.ProduceRecords(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].Partition != 7%3 || first[0].Err != nil {
		t.Fatalf("first: %+v, want one append to partition %d", first, 7%3)
	}
	again, err := b.ProduceRecords(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || !again[0].Result.Duplicate || again[0].Result.BaseOffset != first[0].Result.BaseOffset {
		t.Fatalf("retry: %+v, want a duplicate of %+v", again, first[0].Result)
	}
}

// TestProduceRecordsRefusesWhole: a request with one partition's batch
// over the limit, or a partition the topic lacks, stores nothing.
func TestProduceRecordsRefusesWhole(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	big := plain("x", "y")
	big[0].Partition, big[1].Partition = 0, 1
	big[1].Value = bytes.Repeat([]byte{'v'}, b.MaxBatchBytes())
	if _, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "t", Records: big, ProducerID: -1}); !errors.Is(err, broker.ErrBatchTooLarge) {
		t.Fatalf("a batch over the limit: %v, want ErrBatchTooLarge", err)
	}
	bad := plain("x", "y")
	bad[1].Partition = 2
	if _, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "t", Records: bad, ProducerID: -1}); !errors.Is(err, broker.ErrUnknownPartition) {
		t.Fatalf("partition 2 of 2: %v, want ErrUnknownPartition", err)
	}
	for id := range int32(2) {
		if hw := b.LocalHighWatermark("t", id); hw != 0 {
			t.Errorf("partition %d holds %d record(s) of refused requests", id, hw)
		}
	}
	if _, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "nope", Records: plain(""), ProducerID: -1}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
}

// TestProduceRecordsStoresAsGiven: keys, values, headers and timestamps
// are stored as given; a zero timestamp is the append's time.
func TestProduceRecordsStoresAsGiven(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	recs := []broker.Record{
		{Partition: 0, Key: []byte("k"), Value: []byte("v"), TimestampMs: 1234, Headers: []batch.Header{{Key: "h", Value: []byte("hv")}}},
		{Partition: 0, Value: []byte("w")},
	}
	if _, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "t", Records: recs, ProducerID: -1}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t", Partition: 0}}})
	if err != nil || len(res.Partitions) != 1 || res.Partitions[0].Err != nil {
		t.Fatalf("fetch: %+v, %v", res, err)
	}
	defer res.Release()
	_, got, err := batch.Decode(res.Partitions[0].Batches, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Key) != "k" || string(got[0].Value) != "v" || got[0].Timestamp != 1234 ||
		len(got[0].Headers) != 1 || got[0].Headers[0].Key != "h" || string(got[0].Headers[0].Value) != "hv" ||
		got[1].Key != nil || string(got[1].Value) != "w" || got[1].Timestamp <= 0 {
		t.Fatalf("stored %+v", got)
	}
}

// BenchmarkProduceRecords: 100 records of 100 bytes per request, keyed to
// one partition or spread over four, fsync always (the default) or never.
func BenchmarkProduceRecords(bm *testing.B) {
	for _, fs := range []log.FsyncMode{log.FsyncAlways, log.FsyncNever} {
		for _, keys := range []int{1, 16} {
			bm.Run(fmt.Sprintf("fsync=%v/keys=%d", fs == log.FsyncAlways, keys), func(bm *testing.B) {
				b, err := broker.Open(broker.Config{DataDir: bm.TempDir(), Fsync: log.FsyncPolicy{Mode: fs}})
				if err != nil {
					bm.Fatal(err)
				}
				defer b.Close()
				b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
				ctx := context.Background()
				c := partition.DefaultConfig("t")
				c.Partitions = 4
				if _, err := b.CreateTopic(ctx, "", c); err != nil {
					bm.Fatal(err)
				}
				recs := make([]broker.Record, 100)
				for i := range recs {
					recs[i] = broker.Record{Partition: broker.AnyPartition, Key: fmt.Append(nil, "k", i%keys), Value: make([]byte, 100)}
				}
				bm.SetBytes(100 * 100)
				for bm.Loop() {
					ws, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "t", Records: recs, ProducerID: -1})
					if err != nil {
						bm.Fatal(err)
					}
					for _, w := range ws {
						if w.Err != nil {
							bm.Fatal(w.Err)
						}
					}
				}
			})
		}
	}
}

package broker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
)

// fetchLatest reads a one-partition topic from its start to its high
// watermark through Fetch and returns each key's newest value ("<nil>"
// for a tombstone) and how many records it read.
func fetchLatest(t *testing.T, b *broker.Broker, topic string) (map[string]string, int) {
	t.Helper()
	ctx := context.Background()
	latest := map[string]string{}
	n := 0
	off := int64(0)
	for {
		res, err := b.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: topic, Offset: off}}})
		if err != nil {
			t.Fatal(err)
		}
		fp := res.Partitions[0]
		res.Release()
		if fp.Err != nil {
			t.Fatalf("fetch %s at %d: %v", topic, off, fp.Err)
		}
		if len(fp.Batches) == 0 {
			if off < fp.HighWatermark {
				t.Fatalf("fetch %s at %d below the high watermark %d: nothing", topic, off, fp.HighWatermark)
			}
			return latest, n
		}
		err = batch.Split(fp.Batches, func(raw []byte, info batch.Info) error {
			_, recs, err := batch.Decode(raw, off)
			for _, r := range recs {
				v := string(r.Value)
				if r.Value == nil {
					v = "<nil>"
				}
				latest[string(r.Key)] = v
				n++
			}
			off = info.NextOffset()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A tombstone goes delete.retention.ms after its segment was first
// cleaned (by the cleaner's clock), on a clean that finds nothing else
// dirty; until then it is read. Records are removed one by one from
// batches holding several keys.
func TestCleanerRemovesTombstonesPastTheirHorizon(t *testing.T) {
	b := open(t)
	// The cleaner's clock stands still before the records are written
	// (nothing is old enough to clean) until the test moves it.
	var clock atomic.Int64 // ms
	broker.SetCleanerClock(b, func() time.Time { return time.UnixMilli(clock.Load()) })
	ctx := context.Background()
	c := partition.DefaultConfig("kv")
	c.Cleanup = partition.DefaultCleanup()
	c.Cleanup.Policy = partition.CleanupCompact
	c.Cleanup.DeleteRetentionMs = 60_000
	c.SegmentBytes = partition.MinSegmentBytes
	if _, err := b.CreateTopic(ctx, "", c); err != nil {
		t.Fatal(err)
	}
	produce := func(recs ...batch.Record) {
		t.Helper()
		for i := range recs {
			recs[i].Timestamp = time.Now().UnixMilli()
		}
		if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "kv", Batch: batch.Encode(nil, 0, batch.NoProducer, recs)}); err != nil {
			t.Fatal(err)
		}
	}
	produce(batch.Record{Key: []byte("gone"), Value: []byte("v")}, batch.Record{Key: []byte("kept"), Value: []byte("v0")})
	produce(batch.Record{Key: []byte("gone")}) // the tombstone
	// Roll the tombstone into a closed segment, with newer values of
	// other keys.
	for i := 0; ; i++ {
		produce(batch.Record{Key: fmt.Appendf(nil, "k%d", i%3), Value: make([]byte, 200)})
		info, err := b.Topic(ctx, "", "kv")
		if err != nil {
			t.Fatal(err)
		}
		if info.Partitions[0].Segments >= 3 {
			break
		}
	}
	clock.Store(time.Now().UnixMilli())
	// The cleaner's loop may clean first (kicked by the last roll):
	// CleanNow waits for it.
	if _, err := b.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := fetchLatest(t, b, "kv")
	if got["gone"] != "<nil>" || got["kept"] != "v0" {
		t.Fatalf("after the first clean: gone=%q kept=%q, want the tombstone and v0", got["gone"], got["kept"])
	}
	clock.Add(60_000)
	if _, err := b.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = fetchLatest(t, b, "kv")
	if v, ok := got["gone"]; ok || got["kept"] != "v0" {
		t.Fatalf("past the delete horizon: gone=%q (%v) kept=%q, want gone removed, v0 kept", v, ok, got["kept"])
	}
}

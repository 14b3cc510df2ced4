package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
)

// createCompacted creates a one-partition topic with cleanup.policy
// compact.
func createCompacted(t *testing.T, b *broker.Broker, name string, segmentBytes int64) {
	t.Helper()
	c := partition.DefaultConfig(name)
	c.Cleanup = partition.DefaultCleanup()
	c.Cleanup.Policy = partition.CleanupCompact
	if segmentBytes > 0 {
		c.SegmentBytes = segmentBytes
	}
	if _, err := b.CreateTopic(context.Background(), "", c); err != nil {
		t.Fatal(err)
	}
}

func keyed(kv ...string) []byte {
	var recs []batch.Record
	for i := 0; i+1 < len(kv); i += 2 {
		r := batch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(kv[i]), Value: []byte(kv[i+1])}
		if kv[i] == "" {
			r.Key = nil
		}
		recs = append(recs, r)
	}
	return batch.Encode(nil, 0, batch.NoProducer, recs)
}

// A compacted topic refuses a batch with a keyless record (the whole
// batch: nothing of it is stored) and takes keyed ones; a topic with the
// default policy takes both.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createCompacted(t, b, "kv", 0)
	createTopic(t, b, "plain", 1)
	_, err := b.Produce(ctx, broker.ProduceRequest{Topic: "kv", Batch: keyed("a", "1", "", "2")})
	if !errors.Is(err, broker.ErrInvalidBatch) || !strings.Contains(err.Error(), "record 1 of 2 has no key") {
		t.Fatalf("keyless record on a compacted topic: %v, want ErrInvalidBatch naming it", err)
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "kv", Batch: keyed("a", "1", "b", "2")}); err != nil {
		t.Fatalf("keyed records: %v", err)
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "plain", Batch: keyed("", "1")}); err != nil {
		t.Fatalf("keyless record on a delete topic: %v", err)
	}
}

// The cleaner compacts a compacted topic's closed segments: CleanNow
// rewrites them, a delete topic's are left alone.
func TestCleanNowCompactsCompactedTopics(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createCompacted(t, b, "kv", 4096)
	c := partition.DefaultConfig("plain")
	c.SegmentBytes = 4096
	if _, err := b.CreateTopic(ctx, "", c); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		for _, topic := range []string{"kv", "plain"} {
			if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: topic, Batch: keyed("k"+string(rune('a'+i%5)), "v")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := b.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	// The same batches went to both topics (the background cleaner
	// may have compacted some before CleanNow).
	info, _ := b.Topic(ctx, "", "kv")
	plain, _ := b.Topic(ctx, "", "plain")
	if kv, pl := info.Partitions[0].SizeBytes, plain.Partitions[0].SizeBytes; kv*2 > pl {
		t.Fatalf("compacted topic %d bytes, delete topic %d bytes: want the compacted one at most half", kv, pl)
	}
}

package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/partition"
)

// A produce to a sleeping partition waits inside the request for the
// election its wake started, and is stored; it is not answered "no
// leader yet, retry". A new topic's partitions are born asleep under
// hibernation, so their first produces are such produces. Two batches
// pipelined to the same sleeping partition are stored in the order they
// were started.
func TestProduceWaitsForSleepingPartitionsWake(t *testing.T) {
	b := openOneNodeClusterWith(t, func(c *cluster.Config) { c.HibernateAfter = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := partition.DefaultConfig("nap")
	cfg.Partitions = 2
	if _, err := b.CreateTopic(ctx, "", cfg); err != nil {
		t.Fatal(err)
	}
	asleep := func(id int32) bool {
		for _, p := range b.Cluster().LocalStatus(broker.Node{}).Partitions {
			if p.Topic == "nap" && p.Partition == id {
				return strings.HasPrefix(p.RaftState, "Asleep")
			}
		}
		return false
	}
	for id := int32(0); id < 2; id++ {
		for deadline := time.Now().Add(30 * time.Second); !asleep(id); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("partition %d of a new topic is not asleep under hibernation", id)
			}
		}
	}
	type started struct {
		what string
		f    broker.ProduceFuture
	}
	var waits []started
	for _, w := range []struct {
		what string
		id   int32
	}{{"a", 0}, {"b", 0}, {"c", 1}} {
		f, err := b.StartProduce(ctx, broker.ProduceRequest{Topic: "nap", Partition: w.id, Batch: records(w.what)})
		if err != nil {
			t.Fatalf("start the produce of %s to sleeping partition %d: %v", w.what, w.id, err)
		}
		waits = append(waits, started{w.what, f})
	}
	var got []int64
	for _, w := range waits {
		res, err := w.f.Wait()
		if err != nil {
			t.Fatalf("produce of %s: %v", w.what, err)
		}
		got = append(got, res.BaseOffset)
	}
	if got[0] != 0 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("base offsets of a, b (partition 0) and c (partition 1): %v, want [0 1 0]", got)
	}
}

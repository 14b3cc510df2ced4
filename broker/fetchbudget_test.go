package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
)

// A long poll waiting for more than is there holds none of the read
// budget: another fetch, which needs all of it, is answered while the
// first still waits.
func TestLongPollHoldsNoReadBudget(t *testing.T) {
	b, err := Open(Config{DataDir: t.TempDir(), Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Shutdown()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	b.Ready(Node{APIAddr: "127.0.0.1:1"})
	const budget = 1 << 20
	b.budget = NewMemBudget(budget)
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, "", partition.DefaultConfig("t")); err != nil {
		t.Fatal(err)
	}
	rec := batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(strings.Repeat("v", 1000))}
	if _, err := b.Produce(ctx, ProduceRequest{Topic: "t", Batch: batch.Encode(nil, 0, batch.NoProducer, []batch.Record{rec})}); err != nil {
		t.Fatal(err)
	}
	part := []FetchPartition{{Topic: "t", MaxBytes: budget}}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	waited := make(chan error, 1)
	go func() {
		res, err := b.Fetch(waitCtx, FetchRequest{Partitions: part, MinBytes: budget, MaxBytes: budget, MaxWait: time.Minute})
		if err == nil {
			res.Release()
		}
		waited <- err
	}()
	// The long poll has read the record once and waits for more.
	for fetchedRecords(t, b) < 1 {
		time.Sleep(time.Millisecond)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := b.Fetch(fctx, FetchRequest{Partitions: part, MaxBytes: budget})
	if err != nil {
		t.Fatalf("a fetch while another long-polls: %v", err)
	}
	res.Release()
	if res.Partitions[0].Records != 1 {
		t.Fatalf("a fetch while another long-polls: %+v", res.Partitions[0])
	}
	select {
	case err := <-waited:
		t.Fatalf("the long poll ended early: %v", err)
	default:
	}
	stopWaiting()
	<-waited
}

// fetchedRecords is logd_fetch_records_total.
func fetchedRecords(t *testing.T, b *Broker) float64 {
	mfs, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "logd_fetch_records_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

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
	const budget = 1 << 20
	b := budgetBroker(t, budget)
	ctx := context.Background()
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

// A share fetch's batches hold the read budget as a fetch's do, until
// the front-end releases them once its answer is sent.
func TestShareFetchHoldsReadBudgetUntilReleased(t *testing.T) {
	const budget = 1 << 20
	b := budgetBroker(t, budget)
	ctx := context.Background()
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	rec := batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(strings.Repeat("v", 1000))}
	if _, err := b.Produce(ctx, ProduceRequest{Topic: "t", Batch: batch.Encode(nil, 0, batch.NoProducer, []batch.Record{rec})}); err != nil {
		t.Fatal(err)
	}
	res, err := b.ShareFetch(ctx, ShareFetchRequest{Group: "g", Member: "m", MaxRecords: 10, MaxBytes: budget,
		Partitions: []ShareFetchPartition{{SharePartition: SharePartition{Topic: "t"}}}})
	if err != nil || len(res.Partitions) != 1 || len(res.Partitions[0].Batches) == 0 || res.Release == nil {
		t.Fatalf("share fetch: %+v %v", res, err)
	}
	if b.budget.TryAcquire(budget) {
		t.Fatal("the whole read budget is free while a share fetch's answer holds its batches")
	}
	res.Release()
	res.Release() // a second call returns nothing more
	if !b.budget.TryAcquire(budget) {
		t.Fatal("the read budget is not whole once the answer is released")
	}
	b.budget.Release(budget)
}

// budgetBroker is a node alone whose read budget is budget bytes, with an
// empty topic t.
func budgetBroker(t *testing.T, budget int64) *Broker {
	t.Helper()
	b := aloneBroker(t)
	b.budget = NewMemBudget(budget)
	if _, err := b.CreateTopic(context.Background(), "", partition.DefaultConfig("t")); err != nil {
		t.Fatal(err)
	}
	return b
}

// aloneBroker is a node alone, ready, without fsync, closed at the
// test's end.
func aloneBroker(t *testing.T) *Broker {
	t.Helper()
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
	return b
}

package broker_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// A transaction left open when its node stopped is aborted at its timeout
// after the node starts again, though no client asks anything of the
// coordinator: the partition's last stable offset comes back to its high
// watermark.
func TestOpenTransactionTimesOutAfterRestartWithoutRequests(t *testing.T) {
	dir := t.TempDir()
	cfg := broker.Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	createTopic(t, b, "t", 1)
	pid, epoch, err := b.InitTransactions(ctx, "", "tx", time.Second, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if errs, err := b.AddPartitionsToTxn(ctx, "", "tx", pid, epoch, []broker.TxnPartition{{Topic: "t"}}); err != nil || errs[0] != nil {
		t.Fatalf("add partitions: %v %v", errs, err)
	}
	data := batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: epoch}, []batch.Record{{Timestamp: 1, Value: []byte("v")}})
	binary.BigEndian.PutUint16(data[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(data[17:], batch.Checksum(data))
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: data, Acks: broker.AcksAll, TransactionalID: "tx"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = broker.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	for {
		lso, err := b.LastStableOffset(ctx, "", "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if lso == 2 { // the batch and its ABORT marker
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("last stable offset %d: the open transaction was never aborted", lso)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package broker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// A produce on a single node computes its batch's CRC once: CheckBatch
// validates it, and the partition and the log take the batch.Checked it
// returns without checking again. The same holds for a batch of an
// idempotent producer (the dedup path) and for StartProduce.
func TestProduceComputesBatchCRCOnce(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	plain := records("a", "b")
	idem := batch.Encode(nil, 0, batch.Producer{ID: 9, Epoch: 0, Sequence: 0}, []batch.Record{{Value: []byte("x")}})
	var nPlain, nIdem atomic.Int32
	batch.SetChecksumHook(func(x []byte) {
		switch &x[0] {
		case &plain[0]:
			nPlain.Add(1)
		case &idem[0]:
			nIdem.Add(1)
		}
	})
	t.Cleanup(func() { batch.SetChecksumHook(nil) })
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: plain}); err != nil {
		t.Fatal(err)
	}
	f, err := b.StartProduce(ctx, broker.ProduceRequest{Topic: "t", Batch: idem})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.Wait(); err != nil || res.BaseOffset != 2 {
		t.Fatalf("idempotent batch: %+v, %v", res, err)
	}
	if n := nPlain.Load(); n != 1 {
		t.Errorf("Produce computed the batch's CRC %d times, want 1", n)
	}
	if n := nIdem.Load(); n != 1 {
		t.Errorf("StartProduce of an idempotent batch computed its CRC %d times, want 1", n)
	}
}

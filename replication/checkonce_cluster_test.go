package replication_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication/clustertest"
)

// A batch produced on a 3-node group's leader has its CRC computed once in
// the buffer it came in: by batch.Validate, as produce checks it (Start and
// the leader's log store take the batch.Checked), and not again by Start
// or the log. Each follower checks the bytes it receives once
// (TestStoreLogsChecksReceivedBatchesOnce).
func TestLeaderComputesBatchCRCOnce(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Groups: []string{group}})
	p := c.Leader(group).Replica(group)
	data := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("k"), Value: []byte("checked once")}})
	var n atomic.Int32
	batch.SetChecksumHook(func(b []byte) {
		if &b[0] == &data[0] {
			n.Add(1)
		}
	})
	t.Cleanup(func() { batch.SetChecksumHook(nil) })
	checked, err := batch.Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Start(checked, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(group, 10*time.Second)
	if got := n.Load(); got != 1 {
		t.Fatalf("the leader computed the batch's CRC %d times, want 1 (batch.Validate)", got)
	}
}

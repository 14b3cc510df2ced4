package replication_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

func valueBatch(i int) []byte {
	return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("p"), Value: fmt.Appendf(nil, "p:%d", i)}})
}

// Batches started back to back, without waiting, land in the log in the
// order started, at contiguous offsets, acks=leader and acks=all alike.
func TestStartPipelinesInOrder(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	p := c.Leader(group).Partition(group)
	const n = 300
	ws := make([]*replication.Write, n)
	var prev *replication.Write
	for i := range ws {
		w, err := p.Start(valueBatch(i), i%2 == 0, prev)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		ws[i], prev = w, w
	}
	ctx := within(t, 30*time.Second)
	for i, w := range ws {
		r, err := w.Wait(ctx)
		if err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		if r.BaseOffset != int64(i) || r.LastOffset != int64(i) {
			t.Fatalf("batch %d at %d..%d", i, r.BaseOffset, r.LastOffset)
		}
		if a, err := w.Result(); err != nil || a != r {
			t.Fatalf("batch %d applied: %+v, %v; stored at %+v", i, a, err, r)
		}
	}
	c.WaitConverged(group, 30*time.Second)
	for _, node := range c.Nodes() {
		recs := node.Records(group)
		if len(recs) != n {
			t.Fatalf("%s: %d records, want %d", node.ID, len(recs), n)
		}
		for i, r := range recs {
			if r.Value != fmt.Sprintf("p:%d", i) {
				t.Fatalf("%s: offset %d holds %s", node.ID, i, r.Value)
			}
		}
	}
}

// A leader cut off in the middle of a pipeline: every write ends, the
// ones that succeeded are a prefix of the order started (a failure is
// never followed by a success, which the producers' dedup relies on), and
// every replica's log holds a prefix of that order: no gap.
func TestPipelineCutMidwayLeavesNoGap(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	old := c.Leader(group)
	p := old.Partition(group)
	var ws []*replication.Write
	var prev *replication.Write
	for i := range 400 {
		if i == 100 {
			c.Net.Isolate(old.ID, c.IDs()...)
		}
		w, err := p.Start(valueBatch(i), i%3 == 0, prev)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		ws, prev = append(ws, w), w
		if i >= 100 {
			time.Sleep(time.Millisecond) // some start after the leader steps down
		}
	}
	failed := -1
	for i, w := range ws {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatalf("write %d never ended", i)
		}
		cancel()
		_, err := w.Result()
		switch {
		case err != nil && failed < 0:
			failed = i
			if !errors.Is(err, replication.ErrNotLeader) {
				t.Fatalf("write %d: %v, want a NotLeaderError", i, err)
			}
		case err == nil && failed >= 0:
			t.Fatalf("write %d succeeded after write %d failed", i, failed)
		}
	}
	if failed < 0 {
		t.Fatal("no write failed on the cut-off leader")
	}
	c.Net.Heal()
	if _, err := c.Append(group, valueBatch(-1), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(group, 60*time.Second)
	for _, node := range c.Nodes() {
		recs := node.Records(group)
		for i, r := range recs[:len(recs)-1] {
			if r.Value != fmt.Sprintf("p:%d", i) {
				t.Fatalf("%s: offset %d holds %s: a gap in the order started", node.ID, i, r.Value)
			}
		}
		if len(recs)-1 < failed {
			t.Fatalf("%s: %d of the pipeline's records, %d were acknowledged", node.ID, len(recs)-1, failed)
		}
	}
}

// Leading answers the term on a leader once it applied the earlier
// entries, ErrNotLeader elsewhere, and a new leader's higher term.
func TestLeading(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	old := c.Leader(group)
	term, err := old.Partition(group).Leading(within(t, 10*time.Second))
	if err != nil || term != old.Partition(group).Raft().CurrentTerm() {
		t.Fatalf("leader: term %d, %v", term, err)
	}
	for _, n := range c.Nodes() {
		if n == old {
			continue
		}
		if _, err := n.Partition(group).Leading(within(t, time.Second)); !errors.Is(err, replication.ErrNotLeader) {
			t.Fatalf("%s, a follower: %v", n.ID, err)
		}
	}
	c.Kill(old.ID)
	leader, err := c.WaitLeader(group, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := leader.Partition(group).Leading(within(t, 10*time.Second))
	if err != nil || got <= term {
		t.Fatalf("new leader: term %d (old %d), %v", got, term, err)
	}
}

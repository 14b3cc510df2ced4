package replication_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// behindRetention starts a 3-node cluster with small segments, stops a
// follower, writes while it is down, and has the leader snapshot and trim
// its log below the follower's end (retention up to TrimLimit), so the
// follower can only catch up from the leader's segments. It returns the
// cluster, the stopped follower and the leader.
func behindRetention(t *testing.T) (*clustertest.Cluster, *clustertest.Node, *clustertest.Node) {
	t.Helper()
	c := clustertest.New(t, clustertest.Options{
		Groups: []string{group},
		Log:    func(o *log.Options) { o.SegmentBytes = 2048 },
		// Snapshots only when the test takes them.
		Raft: func(rc *raft.Config) { rc.SnapshotThreshold = 1 << 30; rc.SnapshotInterval = time.Hour },
	})
	appendN(t, c, 10, "a")
	c.WaitConverged(group, 30*time.Second)
	leader := c.Leader(group)
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	fNext := f.Replica(group).Log().NextOffset()
	c.Kill(f.ID)
	appendN(t, c, 150, "b")
	leader = c.Leader(group)
	lp := leader.Replica(group)
	if err := lp.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	// Entries written after the snapshot stay after the trim.
	appendN(t, c, 5, "c")
	limit, err := lp.TrimLimit()
	if err != nil {
		t.Fatal(err)
	}
	// Retention keeps the newer half: the follower copies many segments.
	segs := lp.Log().Segments()
	limit = min(limit, segs[len(segs)/2].BaseOffset)
	if _, err := lp.Log().DeleteSegmentsBefore(limit); err != nil {
		t.Fatal(err)
	}
	if start := lp.Log().StartOffset(); start <= fNext {
		t.Fatalf("leader's log starts at %d after retention, the follower's ends at %d: not behind", start, fNext)
	}
	return c, f, leader
}

// appendN appends n batches of 1-3 records through the leader.
func appendN(t *testing.T, c *clustertest.Cluster, n int, tag string) {
	t.Helper()
	for i := range n {
		recs := make([]batch.Record, 1+i%3)
		for j := range recs {
			recs[j] = batch.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(tag), Value: fmt.Appendf(nil, "%s:%d:%d:%s", tag, i, j, bytes.Repeat([]byte("v"), 40))}
		}
		if _, err := c.Append(group, batch.Encode(nil, 0, batch.NoProducer, recs), 30*time.Second); err != nil {
			t.Fatalf("append %s %d: %v", tag, i, err)
		}
	}
}

// waitSameAsLeader waits until n holds the leader's entries (same last
// index, same high watermark), then checks that n's log starts where the
// leader's does, at the same Raft index, and holds the same committed bytes
// at the same offsets.
func waitSameAsLeader(t *testing.T, c *clustertest.Cluster, n *clustertest.Node, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leader := c.Leader(group)
		lp, p := leader.Replica(group), n.Replica(group)
		if lp != nil && p != nil {
			ll, nl := lp.Log(), p.Log()
			if ll.LastIndex() == nl.LastIndex() && ll.HighWatermark() == nl.HighWatermark() && lp.Raft().AppliedIndex() >= ll.LastIndex() {
				if nl.StartOffset() != ll.StartOffset() || nl.FirstIndex() != ll.FirstIndex() {
					t.Fatalf("%s's log starts at offset %d, index %d; the leader's at %d, %d", n.ID, nl.StartOffset(), nl.FirstIndex(), ll.StartOffset(), ll.FirstIndex())
				}
				if got, want := n.Committed(group), leader.Committed(group); !bytes.Equal(got, want) {
					t.Fatalf("%s's committed bytes (%d) differ from the leader's (%d)", n.ID, len(got), len(want))
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up in %v: last index %d hw %d, leader %d hw %d", n.ID, timeout, nl.LastIndex(), nl.HighWatermark(), ll.LastIndex(), ll.HighWatermark())
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A follower that fell behind the leader's log start (retention deleted
// the segments it needs) catches up by copying the leader's segments: it
// then holds the leader's records at the leader's offsets and Raft
// indexes, replicates new writes, and reopens so.
func TestFollowerBehindRetentionCatchesUpBySegmentCopy(t *testing.T) {
	c, f, _ := behindRetention(t)
	c.Restart(f.ID)
	waitSameAsLeader(t, c, f, 30*time.Second)
	copies, copied := f.Replica(group).CatchUps()
	if copies != 1 || copied == 0 {
		t.Fatalf("%s caught up with %d segment copies (%d bytes), want 1", f.ID, copies, copied)
	}
	t.Logf("%s caught up by copying %d bytes", f.ID, copied)
	appendN(t, c, 20, "d")
	waitSameAsLeader(t, c, f, 30*time.Second)
	c.Kill(f.ID)
	c.Restart(f.ID)
	appendN(t, c, 3, "e")
	waitSameAsLeader(t, c, f, 30*time.Second)
	if copies, _ := f.Replica(group).CatchUps(); copies != 0 {
		t.Fatalf("%s copied segments again after a restart with its log caught up", f.ID)
	}
}

// A follower stopped in the middle of a catch-up (segments staged, not yet
// installed) restarts with its old log, is sent the snapshot again and
// catches up.
func TestCatchUpInterruptedByStop(t *testing.T) {
	c, f, _ := behindRetention(t)
	staged := make(chan struct{})
	var once sync.Once
	replication.SetStagedHook(t, func(ctx context.Context, n int) {
		if n == 2 {
			once.Do(func() {
				close(staged)
				<-ctx.Done() // held until the node stops
			})
		}
	})
	c.Restart(f.ID)
	select {
	case <-staged:
	case <-time.After(30 * time.Second):
		t.Fatal("no catch-up started")
	}
	c.Kill(f.ID)
	c.Restart(f.ID)
	waitSameAsLeader(t, c, f, 60*time.Second)
	if copies, _ := f.Replica(group).CatchUps(); copies != 1 {
		t.Fatalf("%s: %d catch-ups after the restart, want 1", f.ID, copies)
	}
}

package replication_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/log"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// deleteRecords moves the group's log start through its leader.
func deleteRecords(t *testing.T, c *clustertest.Cluster, offset int64) int64 {
	t.Helper()
	leader, err := c.WaitLeader(group, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start, err := leader.Replica(group).DeleteRecords(ctx, offset)
	if err != nil {
		t.Fatalf("delete records to %d: %v", offset, err)
	}
	return start
}

// inside returns an offset strictly inside the segment n-th from the end
// of the leader's log (not a segment's base: the start then lies in the
// middle of a segment, which only the log start file can remember).
func inside(t *testing.T, c *clustertest.Cluster, fromEnd int) int64 {
	t.Helper()
	segs := c.Leader(group).Replica(group).Log().Segments()
	s := segs[len(segs)-fromEnd]
	if s.NextOffset-s.BaseOffset < 2 {
		t.Fatalf("segment %d holds %d records", s.BaseOffset, s.NextOffset-s.BaseOffset)
	}
	return s.BaseOffset + 1
}

func wantStart(t *testing.T, n *clustertest.Node, want int64) {
	t.Helper()
	l := n.Replica(group).Log()
	if got := l.StartOffset(); got != want {
		t.Fatalf("%s: log start %d, want %d", n.ID, got, want)
	}
	var oe *log.OutOfRangeError
	if _, err := l.Read(want-1, 1000); !errors.As(err, &oe) || oe.StartOffset != want {
		t.Fatalf("%s: read below the log start %d: %v, want out of range", n.ID, want, err)
	}
}

// TestDeleteRecordsReplicatedAndDurable: DeleteRecords moves the log start
// on every replica, to an offset inside a segment; the start survives a
// restart of the leader and of a follower, travels in a snapshot to a
// follower that catches up by segment copy, and is refused on a follower
// and above the high watermark.
func TestDeleteRecordsReplicatedAndDurable(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{
		Groups: []string{group},
		Log:    func(o *log.Options) { o.SegmentBytes = 2048 },
		Raft:   func(rc *raft.Config) { rc.SnapshotThreshold = 1 << 30; rc.SnapshotInterval = time.Hour },
	})
	appendN(t, c, 60, "a")
	c.WaitConverged(group, 30*time.Second)
	leader := c.Leader(group)
	lp := leader.Replica(group)
	hw := lp.Log().HighWatermark()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := lp.DeleteRecords(ctx, hw+1); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("delete records above the high watermark: %v", err)
	}
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	if _, err := f.Replica(group).DeleteRecords(ctx, 1); !errors.Is(err, replication.ErrNotLeader) {
		t.Fatalf("delete records on a follower: %v, want ErrNotLeader", err)
	}

	first := inside(t, c, 3)
	if got := deleteRecords(t, c, first); got != first {
		t.Fatalf("delete records to %d: start %d", first, got)
	}
	if got := deleteRecords(t, c, first-1); got != first {
		t.Fatalf("delete records back to %d: start %d, want it unchanged at %d", first-1, got, first)
	}
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		wantStart(t, n, first)
	}

	// A follower down while the start moves again, then falls behind
	// the leader's log start: it catches up by snapshot and segment copy.
	fNext := f.Replica(group).Log().NextOffset()
	c.Kill(f.ID)
	appendN(t, c, 150, "b")
	second := inside(t, c, 4)
	deleteRecords(t, c, second)
	lp = c.Leader(group).Replica(group)
	if err := lp.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	appendN(t, c, 5, "c")
	limit, err := lp.TrimLimit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.Log().DeleteSegmentsBefore(min(limit, lp.Log().StartOffset())); err != nil {
		t.Fatal(err)
	}
	if base := lp.Log().BaseOffset(); base <= fNext {
		t.Fatalf("the leader's oldest segment starts at %d, the follower's log ends at %d: not behind", base, fNext)
	}
	c.Restart(f.ID)
	waitSameAsLeader(t, c, f, 30*time.Second)
	if copies, _ := f.Replica(group).CatchUps(); copies != 1 {
		t.Fatalf("%s caught up with %d segment copies, want 1", f.ID, copies)
	}
	wantStart(t, f, second)

	restartAll(t, c, f)
}

// restartAll restarts the leader and f, moves the start to the high
// watermark, then restarts every node at once: every replica still has
// the start.
func restartAll(t *testing.T, c *clustertest.Cluster, f *clustertest.Node) {
	t.Helper()
	for _, n := range []*clustertest.Node{c.Leader(group), f} {
		c.Kill(n.ID)
		c.Restart(n.ID)
	}
	third := deleteRecords(t, c, -1)
	if hw := c.Leader(group).Replica(group).Log().HighWatermark(); third != hw {
		t.Fatalf("delete records to the high watermark %d: start %d", hw, third)
	}
	appendN(t, c, 3, "d")
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		c.Kill(n.ID)
	}
	for _, n := range c.Nodes() {
		c.Restart(n.ID)
	}
	c.WaitConverged(group, 30*time.Second)
	for _, n := range c.Nodes() {
		wantStart(t, n, third)
	}
}

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

func putShare(t *testing.T, c *clustertest.Cluster, g, state string) {
	t.Helper()
	leader, err := c.WaitLeader(group, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := leader.Replica(group).PutShareState(ctx, g, []byte(state)); err != nil {
		t.Fatalf("put share state %s=%s: %v", g, state, err)
	}
}

// wantShares waits for n's replica to have applied the share states.
func wantShares(t *testing.T, n *clustertest.Node, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]string{}
		for g := range want {
			if s, ok := n.Replica(group).ShareState(g); ok {
				got[g] = string(s.State)
			}
		}
		same := len(got) == len(want)
		for g, w := range want {
			same = same && got[g] == w
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: share states %v, want %v", n.ID, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShareStateReplicatedAndDurable: a share state written on the
// leader is applied on every replica and owns no offset; a follower
// refuses it; a follower that was down while states changed and fell
// behind the leader's log start gets them in the snapshot it installs;
// every replica has them after all restart at once.
func TestShareStateReplicatedAndDurable(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{
		Groups: []string{group},
		Log:    func(o *log.Options) { o.SegmentBytes = 2048 },
		Raft:   func(rc *raft.Config) { rc.SnapshotThreshold = 1 << 30; rc.SnapshotInterval = time.Hour },
	})
	appendN(t, c, 60, "a")
	c.WaitConverged(group, 30*time.Second)
	leader := c.Leader(group)
	next := leader.Replica(group).Log().NextOffset()
	putShare(t, c, "g", "g1")
	if got := leader.Replica(group).Log().NextOffset(); got != next {
		t.Fatalf("a share state moved the next offset from %d to %d", next, got)
	}
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		wantShares(t, n, map[string]string{"g": "g1"})
		if n != leader {
			f = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.Replica(group).PutShareState(ctx, "g", []byte("x")); !errors.Is(err, replication.ErrNotLeader) {
		t.Fatalf("share state on a follower: %v, want ErrNotLeader", err)
	}

	fNext := f.Replica(group).Log().NextOffset()
	c.Kill(f.ID)
	appendN(t, c, 150, "b")
	putShare(t, c, "g", "g2")
	putShare(t, c, "h", "h1")
	lp := c.Leader(group).Replica(group)
	if err := lp.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	appendN(t, c, 5, "c")
	limit, err := lp.TrimLimit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.Log().DeleteSegmentsBefore(limit); err != nil {
		t.Fatal(err)
	}
	if base := lp.Log().BaseOffset(); base <= fNext {
		t.Fatalf("the leader's oldest segment starts at %d, the follower's log ends at %d: not behind", base, fNext)
	}
	c.Restart(f.ID)
	want := map[string]string{"g": "g2", "h": "h1"}
	wantShares(t, f, want)
	if copies, _ := f.Replica(group).CatchUps(); copies != 1 {
		t.Fatalf("%s caught up with %d segment copies, want 1 (a snapshot installed)", f.ID, copies)
	}

	for _, n := range c.Nodes() {
		c.Kill(n.ID)
	}
	for _, n := range c.Nodes() {
		c.Restart(n.ID)
	}
	// (Not WaitConverged: the leader's log starts later, its segments
	// deleted above.)
	if _, err := c.WaitLeader(group, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		wantShares(t, n, want)
	}
}

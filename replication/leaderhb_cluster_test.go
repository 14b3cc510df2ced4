package replication_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication/clustertest"
)

// waitHeartbeatTimeouts waits until every running replica of group runs
// with the leader HeartbeatTimeout if it leads and the follower one
// otherwise (the switch follows Raft's leadership notification).
func waitHeartbeatTimeouts(t *testing.T, c *clustertest.Cluster, group string, follower, leader time.Duration) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var wrong []string
		for _, n := range c.Up() {
			p := n.Replica(group)
			want := follower
			if p.Raft().State() == raft.Leader {
				want = leader
			}
			if got := p.HeartbeatTimeout(); got != want {
				wrong = append(wrong, fmt.Sprintf("%s (%v): %v, want %v", n.ID, p.Raft().State(), got, want))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat timeouts: %v", wrong)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A group's leader runs with the longer leader HeartbeatTimeout (it
// heartbeats less often), its followers with the configured one. When the
// leader's node dies the followers still elect a new leader, which switches
// to the leader value and acknowledges a write; the old leader, restarted,
// follows with the follower value and converges.
func TestLeaderHeartbeatTimeoutFollowsLeadershipAcrossFailover(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Groups: []string{group}})
	// The harness: HeartbeatTimeout 1.5s, LeaderLeaseTimeout 1s.
	const follower, leader = 1500 * time.Millisecond, 5 * time.Second / 3
	waitHeartbeatTimeouts(t, c, group, follower, leader)
	b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte("before")}})
	if _, err := c.Append(group, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	old := c.Leader(group)
	c.Kill(old.ID)
	next, err := c.WaitLeader(group, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID == old.ID {
		t.Fatalf("%s leads after it was killed", old.ID)
	}
	b = batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte("after")}})
	if _, err := c.Append(group, b, 20*time.Second); err != nil {
		t.Fatalf("append after failover: %v", err)
	}
	waitHeartbeatTimeouts(t, c, group, follower, leader)

	c.Restart(old.ID)
	c.WaitConverged(group, 30*time.Second)
	waitHeartbeatTimeouts(t, c, group, follower, leader)
	var got []string
	for _, r := range c.Node(old.ID).Records(group) {
		got = append(got, r.Value)
	}
	if fmt.Sprint(got) != "[before after]" {
		t.Errorf("restarted %s holds %q, want the two writes", old.ID, got)
	}
}

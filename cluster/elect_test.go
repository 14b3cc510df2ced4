package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/meta"
)

// PreferLeader moves a partition led by another replica back to its
// preferred one (the first of its set) at once, on the node that leads
// it; another node answers NotLeaderError naming that leader; once the
// preferred replica leads, every node answers notNeeded.
func TestPreferLeader(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("pl", 1, 3))
	h.waitLocal(cfg)
	set := h.metaLeader().cl().State().Topics["pl"].Replicas[0]
	ctx := context.Background()
	leader := h.partitionLeader("pl", 0)
	// Move the leadership off the preferred replica.
	other := set[1]
	if leader.id != set[0] {
		other = leader.id
	} else {
		r := leader.cl().LocalReplica(meta.GroupOf(cfg, 0))
		addr := leader.cl().State().Nodes[other].RaftAddr
		if err := r.TransferLeadership(raft.ServerID(other), raft.ServerAddress(addr)); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("the leadership off the preferred replica", func() (bool, string) {
		return h.partitionLeader("pl", 0).id == other, ""
	})
	for _, nd := range h.all() {
		if nd.id == other {
			continue
		}
		var nl *NotLeaderError
		notNeeded, err := nd.cl().PreferLeader(ctx, localPartition(nd, "pl", 0))
		if notNeeded || !errors.As(err, &nl) || nl.Leader.ID != other {
			t.Fatalf("%s, not the leader: %v %v, want NotLeaderError naming %s", nd.id, notNeeded, err, other)
		}
	}
	lnode := h.partitionLeader("pl", 0)
	if notNeeded, err := lnode.cl().PreferLeader(ctx, localPartition(lnode, "pl", 0)); err != nil || notNeeded && h.partitionLeader("pl", 0).id != set[0] {
		t.Fatalf("on the leader: %v %v", notNeeded, err)
	}
	h.eventually("the preferred replica leads", func() (bool, string) {
		return h.partitionLeader("pl", 0).id == set[0], ""
	})
	for _, nd := range h.all() {
		if notNeeded, err := nd.cl().PreferLeader(ctx, localPartition(nd, "pl", 0)); !notNeeded || err != nil {
			t.Fatalf("%s once the preferred replica leads: %v %v, want notNeeded", nd.id, notNeeded, err)
		}
	}
}

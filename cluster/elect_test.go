package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
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

// MovePartition moves a partition to another node with Raft's own
// machinery: the new replica catches up with every record, the voters
// become the new set, and Moves lists no move once they are.
func TestMovePartition(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("mv", 1, 2))
	h.waitLocal(cfg)
	set := h.metaLeader().cl().State().Topics["mv"].Replicas[0]
	h.partitionLeader("mv", 0)
	h.appendTo("mv", 0, 3)
	var outside string
	for _, nd := range h.all() {
		if !slices.Contains(set, nd.id) {
			outside = nd.id
		}
	}
	target := []string{set[0], outside}
	if err := h.onMetaLeader(func(c *Cluster) error {
		if err := c.MovePartition(context.Background(), "mv", 0, []string{set[0]}); !errors.Is(err, kind.ErrInvalidArgument) {
			t.Errorf("a set of the wrong size: %v", err)
		}
		if err := c.MovePartition(context.Background(), "mv", 0, []string{set[0], "nobody"}); !errors.Is(err, kind.ErrInvalidArgument) {
			t.Errorf("a node that is not a member: %v", err)
		}
		return c.MovePartition(context.Background(), "mv", 0, target)
	}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the partition on its new replicas, caught up", func() (bool, string) {
		for _, nd := range h.all() {
			if moves := nd.cl().Moves(); len(moves) != 0 {
				return false, fmt.Sprintf("%s: moves %+v", nd.id, moves)
			}
		}
		for _, nd := range h.all() {
			if nd.id != outside {
				continue
			}
			p := localPartition(nd, "mv", 0)
			if p == nil || p.Log.HighWatermark() != 3 {
				return false, "the new replica has not caught up"
			}
			r := nd.cl().LocalReplica(meta.GroupOf(cfg, 0))
			if r == nil {
				return false, "no replica on the new node"
			}
			servers, err := r.Servers()
			if err != nil || len(servers) != 2 {
				return false, fmt.Sprintf("voters %v %v", servers, err)
			}
			for _, s := range servers {
				if !slices.Contains(target, string(s.ID)) {
					return false, fmt.Sprintf("voter %s not in %v", s.ID, target)
				}
			}
		}
		return true, ""
	})
}

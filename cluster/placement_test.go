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

// voters are the voter ids of a Raft configuration, sorted.
func voters(servers []raft.Server) []string {
	var ids []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			ids = append(ids, string(s.ID))
		}
	}
	slices.Sort(ids)
	return ids
}

// waitVoters waits until the leader of each partition of topic has the
// placement's set as its group's voters.
func (h *harness) waitVoters(topic string) {
	h.t.Helper()
	st := h.metaLeader().cl().State()
	t := st.Topics[topic]
	for i, set := range t.Replicas {
		want := slices.Sorted(slices.Values(set))
		h.eventually(fmt.Sprintf("%s/%d's voters are %v", topic, i, want), func() (bool, string) {
			l := h.partitionLeader(topic, int32(i))
			servers, err := l.cl().LocalReplica(meta.GroupOf(t.Config, int32(i))).Servers()
			got := voters(servers)
			return err == nil && slices.Equal(got, want), fmt.Sprintf("%v (%v)", got, err)
		})
	}
}

// A node that joins (through a follower, which sends it to the metadata
// leader) takes its share of new topics (placement goes to the
// least loaded nodes); a node removed has its replicas moved to the
// others first, each group's voters following the placement, leaves the
// metadata and its group, closes its replicas, and, restarted with its old
// data, is refused.
func TestJoinAndRemoveMovePlacement(t *testing.T) {
	h := newHarness(t, 3, nil)
	old := h.createTopic(topicConfig("m", 3, 3))
	h.addVia(h.followerOf(h.metaLeader()).id) // sent on to the leader
	h.waitMembers()
	fresh := h.createTopic(topicConfig("fresh", 1, 1))
	st := h.metaLeader().cl().State()
	if set := st.Topics["fresh"].Replicas[0]; !slices.Equal(set, []string{"n4"}) {
		t.Fatalf("a topic of one replica created after n4 joined was placed on %v, not on the node without load", set)
	}
	h.waitLocal(fresh)
	if l := h.partitionLeader("fresh", 0); l.id != "n4" {
		t.Fatalf("fresh/0 led by %s, not by its only replica n4", l.id)
	}

	leader := h.metaLeader()
	// A node of m's replicas other than the metadata leader (n4 holds none).
	gone := h.node(map[string]string{"n1": "n2", "n2": "n1", "n3": "n1", "n4": "n1"}[leader.id])
	var moved []string
	if err := h.onMetaLeader(func(c *Cluster) (err error) {
		moved, err = c.RemoveNode(context.Background(), gone.id)
		return err
	}); err != nil {
		t.Fatalf("remove %s: %v", gone.id, err)
	}
	if want := []string{"m/0", "m/1", "m/2"}; !slices.Equal(moved, want) {
		t.Errorf("remove %s moved %v, want %v (it held a replica of each)", gone.id, moved, want)
	}
	st = h.metaLeader().cl().State()
	for i, set := range st.Topics["m"].Replicas {
		if slices.Contains(set, gone.id) || !slices.Contains(set, "n4") || len(set) != 3 {
			t.Errorf("m/%d placed on %v after %s was removed: want n4 in its place", i, set, gone.id)
		}
	}
	if _, ok := st.Nodes[gone.id]; ok || !st.Removed[gone.id] {
		t.Errorf("the metadata still lists %s (removed %v)", gone.id, st.Removed[gone.id])
	}
	if v, err := h.metaLeader().cl().IsVoter(gone.id); err != nil || v {
		t.Errorf("%s still a metadata voter (%v)", gone.id, err)
	}
	h.waitVoters("m")
	h.eventually("the removed node, still running, knows it is out", func() (bool, string) {
		err := gone.cl().Refused()
		return err != nil && errors.Is(err, kind.ErrFailedPrecondition), fmt.Sprint(err)
	})
	h.eventually(gone.id+" closes its replicas", func() (bool, string) {
		for i := range old.Partitions {
			if gone.cl().LocalReplica(meta.GroupOf(old, i)) != nil {
				return false, fmt.Sprintf("m/%d open", i)
			}
		}
		return true, ""
	})

	if err := gone.stop(); err != nil {
		t.Fatal(err)
	}
	if err := gone.start(); err != nil {
		t.Fatal(err)
	}
	h.eventually("the removed node, restarted, is refused", func() (bool, string) {
		err := gone.cl().Refused()
		return err != nil && errors.Is(err, kind.ErrFailedPrecondition), fmt.Sprint(err)
	})
	if _, ok := h.metaLeader().cl().Members()[gone.id]; ok {
		t.Fatal("the refused node is listed again")
	}
}

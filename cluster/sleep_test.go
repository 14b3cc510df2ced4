package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/replication/meta"
)

// useFrom makes a use of partition id of topic where a client would send
// it: first at node from, then at the node each *NotLeaderError names,
// until a node hands out its replica; it reports who did.
func (h *harness) useFrom(from *testNode, topic string, id int32) *testNode {
	h.t.Helper()
	at := from
	var served *testNode
	h.eventually(fmt.Sprintf("a use of %s/%d from %s served", topic, id, from.id), func() (bool, string) {
		c := at.cl()
		p := localPartition(at, topic, id)
		_, err := c.Replica(context.Background(), p)
		var nl *NotLeaderError
		switch {
		case err == nil:
			served = at
			return true, ""
		case errors.As(err, &nl) && nl.Woke:
			c.AwaitLeader(context.Background(), p, time.Second)
		case errors.As(err, &nl) && nl.Leader.ID != "" && !h.isCut(from.id, nl.Leader.ID):
			at = h.node(nl.Leader.ID)
		default:
			at = from
		}
		return false, fmt.Sprintf("%s: %v", at.id, err)
	})
	return served
}

// asleepEverywhere waits until every running replica of partition id of
// cfg sleeps.
func (h *harness) asleepEverywhere(cfg meta.Topic, id int32) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%s/%d asleep on every replica", cfg.Config.Name, id), func() (bool, string) {
		for _, nd := range h.running() {
			r := nd.cl().LocalReplica(meta.GroupOf(cfg.Config, id))
			if slices.Contains(cfg.Replicas[id], nd.id) && (r == nil || !r.Asleep()) {
				return false, nd.id + " awake"
			}
		}
		return true, ""
	})
}

// With hibernation on, a new partition is born asleep on every replica
// and takes its first use on its preferred replica (other nodes send the
// use there rather than wake it themselves); once idle it falls asleep
// again on every replica. A node cut off from the leader it knew names,
// for the sleeping group, the placement's first replica it can reach, and
// a use sent there is served by a live node.
func TestHibernation(t *testing.T) {
	h := newHarness(t, 3, func(c *Config) {
		c.HibernateAfter, c.WakeGrace = 300*time.Millisecond, 100*time.Millisecond
	})
	cfg := h.createTopic(topicConfig("z", 1, 3))
	h.waitLocal(cfg)
	tp := h.metaLeader().cl().State().Topics["z"]
	set := tp.Replicas[0]
	pref := h.node(set[0])
	h.asleepEverywhere(tp, 0)
	for _, nd := range h.all() {
		st := nd.cl().LocalStatus(meta.Node{})
		if len(st.Partitions) != 1 || st.Partitions[0].RaftState != "Asleep on "+nd.id || st.Partitions[0].Leader != pref.id {
			t.Errorf("%s's status of the new sleeping partition: %+v, want asleep, led by its preferred %s", nd.id, st.Partitions, pref.id)
		}
	}
	other := h.node(set[1])
	var nl *NotLeaderError
	if _, err := other.cl().Replica(context.Background(), localPartition(other, "z", 0)); !errors.As(err, &nl) || nl.Leader.ID != pref.id || nl.Woke {
		t.Fatalf("a use of a never elected sleeping group on %s: %v, want sent to %s without waking", other.id, err, pref.id)
	}
	if !other.cl().LocalReplica(meta.GroupOf(cfg, 0)).Asleep() {
		t.Fatalf("a use on %s woke the group instead of sending it to the preferred replica", other.id)
	}
	if served := h.useFrom(other, "z", 0); served != pref {
		t.Fatalf("the first use was served by %s, not the preferred replica %s", served.id, pref.id)
	}
	h.asleepEverywhere(tp, 0) // idle again
	if rec, ok := pref.cl().LocalReplica(meta.GroupOf(cfg, 0)).Slept(); !ok || !rec.WasLeader {
		t.Fatalf("%s's sleep record %+v: it led the group when it fell asleep", pref.id, rec)
	}

	h.partition(other.id, pref.id)
	h.eventually(other.id+", cut off from "+pref.id+", names another leader of the sleeping group", func() (bool, string) {
		rs := other.cl().LocalReplica(meta.GroupOf(cfg, 0)).Status()
		leader, _ := other.cl().LeaderOf(rs, set)
		return leader == other.id, leader // the first of the set after pref: itself
	})
	// The use wakes the group on a node other can reach (useFrom follows no
	// redirect to pref), and a leader is elected there.
	h.useFrom(other, "z", 0)
}

// A sleeping group whose replicas move (a node removed) is woken by the
// reconciliation so that its leader can change its voters to the new
// placement: the removed node's replica leaves the group, the new one
// joins it. It does so in the pass that woke the group: with a
// hibernation delay (and wake grace) far shorter than the reconcile's
// period, the woken group would otherwise be asleep again at every pass.
func TestSleepingGroupFollowsPlacement(t *testing.T) {
	for name, d := range map[string][2]time.Duration{
		"usual":       {300 * time.Millisecond, 100 * time.Millisecond},
		"short delay": {50 * time.Millisecond, time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) { sleepingGroupFollowsPlacement(t, d[0], d[1]) })
	}
}

func sleepingGroupFollowsPlacement(t *testing.T, after, grace time.Duration) {
	h := newHarness(t, 3, func(c *Config) {
		c.HibernateAfter, c.WakeGrace = after, grace
	})
	cfg := h.createTopic(topicConfig("moving", 1, 2))
	h.waitLocal(cfg)
	tp := h.metaLeader().cl().State().Topics["moving"]
	set := tp.Replicas[0]
	h.useFrom(h.node(set[0]), "moving", 0)
	h.asleepEverywhere(tp, 0)

	// Remove the replica that is not the metadata leader, or either when
	// neither leads it.
	gone := set[1]
	if h.metaLeader().id == gone {
		gone = set[0]
	}
	if err := h.onMetaLeader(func(c *Cluster) error { _, err := c.RemoveNode(context.Background(), gone); return err }); err != nil {
		t.Fatalf("remove %s: %v", gone, err)
	}
	newSet := h.metaLeader().cl().State().Topics["moving"].Replicas[0]
	if slices.Contains(newSet, gone) || len(newSet) != 2 {
		t.Fatalf("placement after removing %s: %v", gone, newSet)
	}
	want := slices.Sorted(slices.Values(newSet))
	h.eventually(fmt.Sprintf("the group's voters become %v", want), func() (bool, string) {
		for _, id := range newSet {
			servers, err := h.node(id).cl().LocalReplica(meta.GroupOf(cfg, 0)).Servers()
			if got := voters(servers); err != nil || !slices.Equal(got, want) {
				return false, fmt.Sprintf("%s: %v (%v)", id, got, err)
			}
		}
		return true, ""
	})
}

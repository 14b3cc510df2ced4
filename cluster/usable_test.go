package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// A create whose partitions cannot elect a leader (its two replicas are
// cut off from each other) answers, at the request's deadline, that the
// topic is created but which partition has no leader yet (failed
// precondition, not "retry": a retry would be told the topic exists); the
// partition takes writes once the link heals.
func TestCreateWithoutLeaderFails(t *testing.T) {
	h := newHarness(t, 3, nil)
	// An empty cluster places a partition of two replicas on the two
	// least loaded nodes, the lower ids first: n1 and n2.
	h.partition("n1", "n2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var err error
	h.eventually("the create answered by the metadata leader", func() (bool, string) {
		_, err = h.metaLeader().cl().CreateTopic(ctx, topicConfig("cut", 1, 2))
		var nl *NotLeaderError
		return !errors.As(err, &nl), fmt.Sprint(err)
	})
	st := h.metaLeader().cl().State()
	if set := st.Topics["cut"].Replicas; len(set) != 1 || !slices.Equal(slices.Sorted(slices.Values(set[0])), []string{"n1", "n2"}) {
		t.Fatalf("placed on %v, not on n1 and n2 as the test assumes", set)
	}
	if !errors.Is(err, kind.ErrFailedPrecondition) || !strings.Contains(err.Error(), "partition 0 has no leader") {
		t.Fatalf("create of a partition whose replicas are cut off from each other: %v, want failed precondition naming partition 0", err)
	}
	h.heal()
	h.partitionLeader("cut", 0)
}

// A leader moved off its preferred replica (by a failure) is handed back
// to it once it is back: leaders are spread over the nodes as placed.
func TestLeadersReturnToPreferred(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("spread", 1, 3))
	h.waitLocal(cfg)
	pref := h.node(h.metaLeader().cl().State().Topics["spread"].Replicas[0][0])
	if l := h.partitionLeader("spread", 0); l != pref {
		t.Fatalf("led by %s, not its preferred replica %s", l.id, pref.id)
	}
	// Until the other replicas hold the group's first entry (its
	// configuration) they cannot stand for election: a follower knows its
	// leader from a heartbeat before that (firstelection.go).
	h.eventually("every replica holds the group's configuration", func() (bool, string) {
		for _, nd := range h.running() {
			servers, err := nd.cl().LocalReplica(meta.GroupOf(cfg, 0)).Servers()
			if err != nil || len(voters(servers)) != 3 {
				return false, fmt.Sprintf("%s: %v (%v)", nd.id, servers, err)
			}
		}
		return true, ""
	})
	h.isolate(pref.id)
	h.eventually("another replica leads while "+pref.id+" is cut off", func() (bool, string) {
		for _, nd := range h.running() {
			if r := nd.cl().LocalReplica(meta.GroupOf(cfg, 0)); nd != pref && r.IsLeader() {
				return true, ""
			}
		}
		return false, ""
	})
	h.heal()
	h.eventually("leadership back on "+pref.id, func() (bool, string) {
		l := h.partitionLeader("spread", 0)
		return l == pref, l.id
	})
}

// A leader hands its partition to the preferred replica only while that
// node is up: a transfer to a stopped node would hold the partition's
// writes until Raft gives it up. Once the node is back and answers, it is
// a target again.
func TestNoLeaderTransferToADownNode(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("spread", 1, 3))
	h.waitLocal(cfg)
	group := meta.GroupOf(cfg, 0)
	pref := h.node(h.metaLeader().cl().State().Topics["spread"].Replicas[0][0])
	h.eventually("every replica holds the group's configuration", func() (bool, string) {
		for _, nd := range h.running() {
			servers, err := nd.cl().LocalReplica(group).Servers()
			if err != nil || len(voters(servers)) != 3 {
				return false, fmt.Sprintf("%s: %v (%v)", nd.id, servers, err)
			}
		}
		return true, ""
	})
	if err := pref.stop(); err != nil {
		t.Fatal(err)
	}
	var leader *testNode
	h.eventually("another replica leads while "+pref.id+" is down", func() (bool, string) {
		for _, nd := range h.running() {
			if r := nd.cl().LocalReplica(group); r != nil && r.IsLeader() {
				leader = nd
				return true, ""
			}
		}
		return false, ""
	})
	if _, ok := leader.cl().spreadTargets(leader.cl().State())[group]; ok {
		t.Fatalf("%s would hand %s to %s, which is down", leader.id, group, pref.id)
	}
	if err := pref.start(); err != nil {
		t.Fatal(err)
	}
	h.eventually(pref.id+" is a target again once it answers", func() (bool, string) {
		l := h.partitionLeader("spread", 0)
		if l == pref {
			return true, "" // the spread loop already handed it back
		}
		_, ok := l.cl().spreadTargets(l.cl().State())[group]
		return ok, l.id
	})
}

// A create that gives up names every partition still without a leader,
// each with its replicas: the operator learns all the nodes to bring back.
func TestUnledErrorNamesEveryPartition(t *testing.T) {
	topic := meta.Topic{Replicas: [][]string{{"n1"}, {"n2"}, {"n3"}}}
	err := unledError("t", topic, []int{0, 2}, 5*time.Second)
	if !errors.Is(err, kind.ErrFailedPrecondition) {
		t.Fatalf("kind: %v", err)
	}
	if want := "partitions 0 [n1], 2 [n3] have no leader after 5s"; !strings.Contains(err.Error(), want) {
		t.Fatalf("%q does not say %q", err, want)
	}
	one := unledError("t", topic, []int{2}, 5*time.Second).Error()
	if want := "partition 2 has no leader after 5s (too few of its replicas [n3] are up?)"; !strings.Contains(one, want) {
		t.Fatalf("%q does not say %q", one, want)
	}
}

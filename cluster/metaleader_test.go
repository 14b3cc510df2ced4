package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// followerOf is a running node other than leader.
func (h *harness) followerOf(leader *testNode) *testNode {
	for _, nd := range h.running() {
		if nd != leader {
			return nd
		}
	}
	h.t.Fatal("no follower")
	return nil
}

func topicConfig(name string, partitions, replicas int32) partition.TopicConfig {
	cfg := partition.DefaultConfig(name)
	cfg.Partitions, cfg.Replicas = partitions, replicas
	return cfg
}

// createTopic creates a topic through the metadata leader.
func (h *harness) createTopic(cfg partition.TopicConfig) partition.TopicConfig {
	h.t.Helper()
	var got partition.TopicConfig
	err := h.onMetaLeader(func(c *Cluster) error {
		var err error
		got, err = c.CreateTopic(context.Background(), cfg)
		return err
	})
	if err != nil {
		h.t.Fatalf("create topic %s: %v", cfg.Name, err)
	}
	return got
}

// When the metadata leader is cut off from the others, they elect another
// within a few election timeouts, and the old one steps down: the
// metadata takes writes again, the old leader answers that it does not
// lead (naming no one it cannot reach), and, once the links heal, it
// learns what was written meanwhile.
func TestMetaLeaderFailover(t *testing.T) {
	h := newHarness(t, 3, nil)
	old := h.metaLeader()
	h.isolate(old.id)
	if leader := h.metaLeader(); leader == old {
		t.Fatalf("%s still leads the metadata, cut off from the others", old.id)
	}
	h.eventually("the old leader, cut off, steps down", func() (bool, string) {
		return !old.cl().IsMetaLeader(), ""
	})
	h.createTopic(topicConfig("after-failover", 1, 3))

	var nl *NotLeaderError
	if err := old.cl().OnMetaLeader(); !errors.As(err, &nl) || !nl.Untouched {
		t.Fatalf("the old leader, cut off: OnMetaLeader = %v, want NotLeaderError", err)
	}
	if _, err := old.cl().CreateTopic(context.Background(), topicConfig("on-old", 1, 1)); !errors.As(err, &nl) {
		t.Fatalf("create on the old leader, cut off: %v, want NotLeaderError", err)
	}
	if old.cl().State().Topics["after-failover"].Config.Name != "" {
		t.Fatal("the old leader, cut off, has a topic created after it was")
	}

	h.heal()
	h.eventually("the old leader learns the topic and creates it locally", func() (bool, string) {
		c, topics := old.up()
		_, ok := c.State().Topics["after-failover"]
		lc, err := topics.Config("after-failover")
		return ok && err == nil && lc.Partitions == 1, fmt.Sprintf("in metadata %v, local %v", ok, err)
	})
	if l := h.metaLeader(); l.cl().State().Topics["on-old"].Config.Name != "" {
		t.Fatal("a create refused on the old leader made its topic")
	}
}

// Every metadata write on a node that does not lead the metadata answers
// *NotLeaderError, untouched, naming the leader (its id and addresses), so
// a front-end can send the request there; nothing changes.
func TestMetaWritesOnFollower(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.createTopic(topicConfig("t", 1, 3))
	leader := h.metaLeader()
	f := h.followerOf(leader).cl()
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"create":         func() error { _, err := f.CreateTopic(ctx, topicConfig("u", 1, 1)); return err },
		"alter":          func() error { _, err := f.AlterTopic(ctx, "t", partition.ConfigChange{}); return err },
		"add partitions": func() error { _, err := f.AddPartitions(ctx, "t", 2); return err },
		"delete":         func() error { return f.DeleteTopic(ctx, "t") },
		"commit offsets": func() error {
			return f.CommitOffsets(ctx, "g", []offsets.Committed{{Topic: "t", Offset: 1}})
		},
		"record generation": func() error { return f.RecordGeneration(ctx, "g", 1) },
		"delete group":      func() error { return f.DeleteGroupOffsets(ctx, "g") },
		"remove node":       func() error { _, err := f.RemoveNode(ctx, leader.id); return err },
	} {
		var nl *NotLeaderError
		err := call()
		if !errors.As(err, &nl) || !nl.Untouched || nl.Leader.ID != leader.id || nl.Leader.APIAddr != apiAddr(leader.id) ||
			nl.Leader.RaftAddr != leader.addr {
			t.Errorf("%s on a follower: %v (%+v), want NotLeaderError naming %s", name, err, nl, leader.id)
		}
	}
	time.Sleep(100 * time.Millisecond) // room for a write that should not have happened
	st := leader.cl().State()
	if _, ok := st.Topics["u"]; ok || st.Topics["t"].Config.Partitions != 1 || len(st.Nodes) != 3 {
		t.Fatalf("a refused write changed the metadata: %+v", st)
	}
	if cs, err := leader.cl().Offsets().Fetch("g", "t"); err != nil || len(cs) != 0 {
		t.Fatalf("a refused commit stored offsets: %v %v", cs, err)
	}
}

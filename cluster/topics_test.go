package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// localPartition is node nd's local partition id of topic, nil when it
// has none (yet).
func localPartition(nd *testNode, topic string, id int32) *partition.Partition {
	_, topics := nd.up()
	if topics == nil {
		return nil
	}
	p, err := topics.Partition(topic, id)
	if err != nil {
		return nil
	}
	return p
}

// partitionLeader waits until exactly one running node serves partition
// id of topic (Cluster.Replica hands it its replica) and every other
// running node with the partition answers *NotLeaderError naming it, and
// returns that node.
func (h *harness) partitionLeader(topic string, id int32) *testNode {
	h.t.Helper()
	var leader *testNode
	h.eventually(fmt.Sprintf("one leader of %s/%d that the others name", topic, id), func() (bool, string) {
		leader = nil
		named := map[string]int{}
		for _, nd := range h.running() {
			p := localPartition(nd, topic, id)
			if p == nil {
				return false, nd.id + " has no partition"
			}
			r, err := nd.cl().Replica(context.Background(), p)
			var nl *NotLeaderError
			switch {
			case err == nil && r != nil:
				if leader != nil {
					return false, "two leaders"
				}
				leader = nd
			case errors.As(err, &nl):
				named[nl.Leader.ID]++
			default:
				return false, fmt.Sprintf("%s: %v", nd.id, err)
			}
		}
		if leader == nil {
			return false, fmt.Sprintf("no leader, the others name %v", named)
		}
		if len(named) > 1 || (len(named) == 1 && named[leader.id] == 0) {
			return false, fmt.Sprintf("leader %s, the others name %v", leader.id, named)
		}
		return true, ""
	})
	return leader
}

// waitLocal waits until every running node's local topic is cfg and it
// holds a replica of each partition the placement puts on it, and none of
// the others.
func (h *harness) waitLocal(cfg partition.TopicConfig) {
	h.t.Helper()
	h.eventually("every node has topic "+cfg.Name+" as the metadata says", func() (bool, string) {
		for _, nd := range h.running() {
			c, topics := nd.up()
			lc, err := topics.Config(cfg.Name)
			if err != nil || lc != cfg {
				return false, fmt.Sprintf("%s: %+v (%v)", nd.id, lc, err)
			}
			t := c.State().Topics[cfg.Name]
			if len(t.Replicas) != int(cfg.Partitions) {
				return false, fmt.Sprintf("%s: metadata has %d partitions", nd.id, len(t.Replicas))
			}
			for i, set := range t.Replicas {
				has := c.LocalReplica(meta.GroupOf(cfg, int32(i))) != nil
				if has != slices.Contains(set, nd.id) {
					return false, fmt.Sprintf("%s: replica of partition %d: %v, placed on %v", nd.id, i, has, set)
				}
			}
		}
		return true, ""
	})
}

// waitGone waits until no running node has topic cfg, locally or as
// replicas.
func (h *harness) waitGone(cfg partition.TopicConfig) {
	h.t.Helper()
	h.eventually("topic "+cfg.Name+" gone from every node", func() (bool, string) {
		for _, nd := range h.running() {
			c, topics := nd.up()
			if lc, err := topics.Config(cfg.Name); !errors.Is(err, partition.ErrTopicNotFound) && lc.CreatedMs == cfg.CreatedMs {
				return false, nd.id + " still has the topic"
			}
			if _, ok := c.State().Topics[cfg.Name]; ok && c.State().Topics[cfg.Name].Config.CreatedMs == cfg.CreatedMs {
				return false, nd.id + "'s metadata still has it"
			}
			for i := range cfg.Partitions {
				if c.LocalReplica(meta.GroupOf(cfg, i)) != nil {
					return false, fmt.Sprintf("%s still has the replica of partition %d", nd.id, i)
				}
			}
		}
		return true, ""
	})
}

// unled is the first partition of topic without a leader that a majority
// of its replicas name, by the replicas' own state, or -1.
func (h *harness) unled(topic string) int {
	st := h.metaLeader().cl().State()
	for i, set := range st.Topics[topic].Replicas {
		votes := map[string]int{}
		leads := map[string]bool{}
		for _, nd := range h.running() {
			c, _ := nd.up()
			r := c.LocalReplica(meta.GroupOf(st.Topics[topic].Config, int32(i)))
			if r == nil {
				continue
			}
			id, _ := r.Leader()
			votes[string(id)]++
			if r.IsLeader() {
				leads[nd.id] = true
			}
		}
		ok := false
		for l, v := range votes {
			ok = ok || (l != "" && leads[l] && 2*v > len(set))
		}
		if !ok {
			return i
		}
	}
	return -1
}

// A topic's life through the metadata leader: created, its replicas placed
// over the nodes with the preferred leaders spread, made on every node
// with a leader per partition before the create returns (the preferred
// replica wins the first election); altered; grown; deleted from every
// node; created again under the same name as a new incarnation, with new
// groups and none of the old records.
func TestTopicLifecycle(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("orders", 3, 0))
	if p := h.unled("orders"); p >= 0 {
		t.Errorf("CreateTopic returned before partition %d had a leader a majority names", p)
	}
	if cfg.Replicas != 3 || cfg.CreatedMs == 0 {
		t.Fatalf("created %+v: want the default 3 replicas and a creation time", cfg)
	}
	h.waitLocal(cfg)
	st := h.metaLeader().cl().State()
	firsts := map[string]bool{}
	for i, set := range st.Topics["orders"].Replicas {
		if len(set) != 3 {
			t.Fatalf("partition %d placed on %v, want 3 nodes", i, set)
		}
		firsts[set[0]] = true
		if l := h.partitionLeader("orders", int32(i)); l.id != set[0] {
			t.Errorf("partition %d: led by %s, not its preferred replica %s", i, l.id, set[0])
		}
	}
	if len(firsts) != 3 {
		t.Errorf("preferred leaders not spread over the nodes: %v", st.Topics["orders"].Replicas)
	}

	retention := int64(3_600_000)
	var altered partition.TopicConfig
	if err := h.onMetaLeader(func(c *Cluster) (err error) {
		altered, err = c.AlterTopic(context.Background(), "orders", partition.ConfigChange{RetentionMs: &retention})
		return err
	}); err != nil || altered.RetentionMs != retention || altered.CreatedMs != cfg.CreatedMs {
		t.Fatalf("alter: %+v, %v", altered, err)
	}
	h.waitLocal(altered)

	var grown partition.TopicConfig
	if err := h.onMetaLeader(func(c *Cluster) (err error) {
		grown, err = c.AddPartitions(context.Background(), "orders", 5)
		return err
	}); err != nil || grown.Partitions != 5 {
		t.Fatalf("add partitions: %+v, %v", grown, err)
	}
	if p := h.unled("orders"); p >= 0 {
		t.Errorf("AddPartitions returned before partition %d had a leader a majority names", p)
	}
	h.waitLocal(grown)
	for i := int32(3); i < 5; i++ {
		h.partitionLeader("orders", i)
	}

	// A record in partition 0, to see it go with the topic.
	l := h.partitionLeader("orders", 0)
	r := l.cl().LocalReplica(meta.GroupOf(cfg, 0))
	if _, err := r.Append(context.Background(), batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte("v")}})); err != nil {
		t.Fatal(err)
	}

	if err := h.onMetaLeader(func(c *Cluster) error { return c.DeleteTopic(context.Background(), "orders") }); err != nil {
		t.Fatalf("delete: %v", err)
	}
	h.waitGone(grown)

	again := h.createTopic(topicConfig("orders", 1, 3))
	if again.CreatedMs == cfg.CreatedMs || meta.GroupOf(again, 0) == meta.GroupOf(cfg, 0) {
		t.Fatalf("the new incarnation %+v shares the old one's groups", again)
	}
	h.waitLocal(again)
	for _, nd := range h.running() {
		if hw := localPartition(nd, "orders", 0).Log.HighWatermark(); hw != 0 {
			t.Errorf("%s: the new incarnation's partition 0 has high watermark %d: the old records came back", nd.id, hw)
		}
	}
}

// The metadata leader refuses topic changes the state does not allow,
// with errors of the kinds front-ends map, and changes nothing.
func TestTopicChangesRefused(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("t", 2, 2))
	ctx := context.Background()
	for name, tc := range map[string]struct {
		call func(c *Cluster) error
		want error
	}{
		"create existing": {func(c *Cluster) error { _, err := c.CreateTopic(ctx, topicConfig("t", 1, 1)); return err }, partition.ErrTopicExists},
		"more replicas than nodes": {func(c *Cluster) error { _, err := c.CreateTopic(ctx, topicConfig("u", 1, 4)); return err },
			kind.ErrInvalidArgument},
		"bad name":         {func(c *Cluster) error { _, err := c.CreateTopic(ctx, topicConfig("a b", 1, 1)); return err }, nil},
		"alter missing":    {func(c *Cluster) error { _, err := c.AlterTopic(ctx, "nope", partition.ConfigChange{}); return err }, partition.ErrTopicNotFound},
		"grow missing":     {func(c *Cluster) error { _, err := c.AddPartitions(ctx, "nope", 3); return err }, partition.ErrTopicNotFound},
		"shrink":           {func(c *Cluster) error { _, err := c.AddPartitions(ctx, "t", 1); return err }, partition.ErrInvalidConfig},
		"same count":       {func(c *Cluster) error { _, err := c.AddPartitions(ctx, "t", 2); return err }, partition.ErrInvalidConfig},
		"delete missing":   {func(c *Cluster) error { return c.DeleteTopic(ctx, "nope") }, partition.ErrTopicNotFound},
		"remove unknown":   {func(c *Cluster) error { _, err := c.RemoveNode(ctx, "n9"); return err }, ErrUnknownNode},
		"join without ids": {func(c *Cluster) error { return c.Join(ctx, meta.Node{}, false) }, kind.ErrInvalidArgument},
	} {
		err := h.onMetaLeader(tc.call)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	st := h.metaLeader().cl().State()
	if len(st.Topics) != 1 || st.Topics["t"].Config != cfg || len(st.Nodes) != 3 {
		t.Fatalf("refused changes changed the metadata: %+v", st)
	}
}

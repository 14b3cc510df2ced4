package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// MovePartition makes nodes (the preferred leader first) the replicas of
// partition id of topic, as Kafka's AlterPartitionReassignments: the
// placement changes in the metadata, and the partition's leader adds the
// new replicas as voters, which catch up by Raft (a snapshot, then the
// log), before it removes the replicas left out (reconcile: matchVoters,
// the machinery RemoveNode moves replicas with). nodes must be as many
// distinct members as the topic's replication factor
// (kind.ErrInvalidArgument otherwise). It runs on the metadata leader.
func (c *Cluster) MovePartition(ctx context.Context, topic string, id int32, nodes []string) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	c.members.Lock()
	defer c.members.Unlock()
	st := c.State()
	t, ok := st.Topics[topic]
	switch {
	case !ok:
		return fmt.Errorf("%w: %q", partition.ErrTopicNotFound, topic)
	case id < 0 || int(id) >= len(t.Replicas):
		return fmt.Errorf("%w: %s/%d", partition.ErrPartitionNotFound, topic, id)
	case len(nodes) != int(t.Config.Replicas):
		return kind.Errorf(kind.ErrInvalidArgument, "move %s/%d: topic %q has %d replicas per partition, %d nodes named", topic, id, topic, t.Config.Replicas, len(nodes))
	}
	for i, n := range nodes {
		if _, ok := st.Nodes[n]; !ok {
			return kind.Errorf(kind.ErrInvalidArgument, "move %s/%d: node %q is not a member of the cluster", topic, id, n)
		}
		if slices.Contains(nodes[:i], n) {
			return kind.Errorf(kind.ErrInvalidArgument, "move %s/%d: node %q named twice", topic, id, n)
		}
	}
	if slices.Equal(t.Replicas[id], nodes) {
		return nil
	}
	sets := make([][]string, len(t.Replicas))
	for i, s := range t.Replicas {
		sets[i] = slices.Clone(s)
	}
	sets[id] = slices.Clone(nodes)
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpSetReplicas, Name: topic, Topic: &meta.Topic{Replicas: sets}}); err != nil {
		return c.RaftError(err)
	}
	c.kickReconcile()
	return nil
}

// Move is a partition whose replicas are changing: its placement's set
// (Target) and the voters of its Raft group now.
type Move struct {
	Topic          string
	Partition      int32
	Target, Voters []string
}

// Moves lists the partitions being moved, in topic and partition order:
// those whose Raft voters, as this node's replica knows them (the group's
// latest configuration), are not the placement's set. A partition this
// node keeps no replica of is not listed.
func (c *Cluster) Moves() []Move {
	st := c.State()
	var out []Move
	for _, name := range slices.Sorted(maps.Keys(st.Topics)) {
		t := st.Topics[name]
		for i, set := range t.Replicas {
			r := c.rn.Replica(c.groups.of(t.Config, int32(i)))
			if r == nil {
				continue
			}
			servers, err := r.Servers()
			if err != nil {
				continue
			}
			var voters []string
			for _, s := range servers {
				voters = append(voters, string(s.ID))
			}
			if !sameMembers(voters, set) {
				out = append(out, Move{Topic: name, Partition: int32(i), Target: slices.Clone(set), Voters: voters})
			}
		}
	}
	return out
}

func sameMembers(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}

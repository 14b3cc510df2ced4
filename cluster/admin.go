package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// The metadata writes of a cluster, run on the metadata leader only (on
// others they answer *NotLeaderError, Untouched, which a front-end may
// forward). Each checks the request against the current state (after
// OnMetaLeader's barrier), decides what is not deterministic (creation
// time, placement) and applies one command; the nodes' reconcilers then
// create, alter or delete their local topics and replicas.

// defaultReplicas is a new topic's replica count when the request gives
// none: three, or every node of a smaller cluster.
const defaultReplicas = 3

// CheckNewTopic checks a topic to create, for a node that runs alone
// (alone, nodes 1) and for the metadata leader of a cluster of nodes
// nodes alike: that no topic has its name (exists), that nodes can hold
// its replicas (0, the default, is three or every node of a smaller
// cluster, one alone), and its settings (cfg.Validate). It returns cfg
// with the replica count filled in.
func CheckNewTopic(cfg partition.TopicConfig, exists bool, nodes int, alone bool) (partition.TopicConfig, error) {
	if exists {
		return cfg, fmt.Errorf("%w: %q", partition.ErrTopicExists, cfg.Name)
	}
	switch {
	case alone:
		if cfg.Replicas == 0 {
			cfg.Replicas = 1
		}
		if cfg.Replicas != 1 {
			return cfg, kind.Errorf(kind.ErrInvalidArgument, "create topic: this node runs alone, so replicas must be 1, got %d (start a cluster for more)", cfg.Replicas)
		}
	case nodes == 0:
		// Right after bootstrap the metadata group has a leader but no node
		// registered yet: not the request's fault, and over in a moment.
		return cfg, kind.Errorf(kind.ErrUnavailable, "create topic: the cluster is still being set up (no node registered yet): retry")
	default:
		if cfg.Replicas == 0 {
			cfg.Replicas = int32(min(defaultReplicas, nodes))
		}
		if cfg.Replicas < 1 || int(cfg.Replicas) > nodes {
			return cfg, kind.Errorf(kind.ErrInvalidArgument, "create topic: %d replicas asked, but the cluster has %d nodes: ask for 1 to %d", cfg.Replicas, nodes, nodes)
		}
	}
	return cfg, cfg.Validate()
}

// CreateTopic creates a topic of cfg (Name, Partitions, Replicas: 0 for
// the default, and its settings), places its replicas and waits until this
// node has it and every partition has a leader that takes a produce (at
// most until just before the request's deadline, or UsableTimeout without
// one: setupContext; then kind.ErrFailedPrecondition naming the partition).
func (c *Cluster) CreateTopic(ctx context.Context, cfg partition.TopicConfig) (partition.TopicConfig, error) {
	if err := c.OnMetaLeader(); err != nil {
		return cfg, err
	}
	st := c.State()
	_, exists := st.Topics[cfg.Name]
	cfg, err := CheckNewTopic(cfg, exists, len(st.Nodes), false)
	if err != nil {
		return cfg, err
	}
	cfg.CreatedMs = time.Now().UnixMilli()
	sets, err := replication.PlaceReplicas(loads(st, ""), int(cfg.Partitions), int(cfg.Replicas))
	if err != nil {
		return cfg, kind.Errorf(kind.ErrInvalidArgument, "create topic: %v", err)
	}
	t := meta.Topic{Config: cfg, Replicas: sets, Initial: sets}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpCreateTopic, Topic: &t}); err != nil {
		return cfg, c.RaftError(err)
	}
	ctx, cancel := setupContext(ctx)
	defer cancel()
	if err := c.awaitLocal(ctx, cfg); err != nil {
		return cfg, err
	}
	return cfg, c.awaitUsable(ctx, cfg.Name, 0)
}

// AlterTopic changes a topic's settings.
func (c *Cluster) AlterTopic(ctx context.Context, name string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	if err := c.OnMetaLeader(); err != nil {
		return partition.TopicConfig{}, err
	}
	t, ok := c.State().Topics[name]
	if !ok {
		return partition.TopicConfig{}, fmt.Errorf("%w: %q", partition.ErrTopicNotFound, name)
	}
	cfg := t.Config.Apply(ch)
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpAlterTopic, Name: name, Topic: &meta.Topic{Config: cfg}}); err != nil {
		return cfg, c.RaftError(err)
	}
	ctx, cancel := setupContext(ctx)
	defer cancel()
	return cfg, c.awaitLocal(ctx, cfg)
}

// AddPartitions grows a topic to count partitions: it places the new
// partitions' replicas as CreateTopic places a new topic's (the least
// loaded nodes, preferred leaders spread), applies one command, and
// waits until this node has them and each new partition has a leader
// that takes a produce (as CreateTopic: setupContext; then
// kind.ErrFailedPrecondition naming the partition).
func (c *Cluster) AddPartitions(ctx context.Context, name string, count int32) (partition.TopicConfig, error) {
	if err := c.OnMetaLeader(); err != nil {
		return partition.TopicConfig{}, err
	}
	st := c.State()
	t, ok := st.Topics[name]
	if !ok {
		return partition.TopicConfig{}, fmt.Errorf("%w: %q", partition.ErrTopicNotFound, name)
	}
	if err := partition.ValidateGrowth(t.Config, count); err != nil {
		return t.Config, err
	}
	if int(t.Config.Replicas) > len(st.Nodes) {
		return t.Config, kind.Errorf(kind.ErrFailedPrecondition, "add partitions to %q: its partitions have %d replicas, but the cluster has %d nodes now: add a node first",
			name, t.Config.Replicas, len(st.Nodes))
	}
	sets, err := replication.PlaceReplicas(loads(st, ""), int(count-t.Config.Partitions), int(t.Config.Replicas))
	if err != nil {
		return t.Config, kind.Errorf(kind.ErrInvalidArgument, "add partitions to %q: %v", name, err)
	}
	cfg := t.Config
	cfg.Partitions = count
	add := meta.Topic{Config: cfg, Replicas: sets, Initial: sets}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpAddPartitions, Name: name, Topic: &add}); err != nil {
		return t.Config, c.RaftError(err)
	}
	ctx, cancel := setupContext(ctx)
	defer cancel()
	if err := c.awaitLocal(ctx, cfg); err != nil {
		return cfg, err
	}
	return cfg, c.awaitUsable(ctx, name, int(t.Config.Partitions))
}

// DeleteTopic deletes a topic (its committed offsets go with it).
func (c *Cluster) DeleteTopic(ctx context.Context, name string) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	if _, ok := c.State().Topics[name]; !ok {
		return fmt.Errorf("%w: %q", partition.ErrTopicNotFound, name)
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpDeleteTopic, Name: name}); err != nil {
		return c.RaftError(err)
	}
	ctx, cancel := setupContext(ctx)
	defer cancel()
	return c.awaitLocal(ctx, partition.TopicConfig{Name: name})
}

// CommitOffsets stores a group's offsets through the metadata group.
func (c *Cluster) CommitOffsets(ctx context.Context, group string, cs []offsets.Committed) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpCommitOffsets, Group: group, Offsets: cs}))
}

// RecordGeneration records gen as group's newest generation through the
// metadata group (meta.OpGroupGeneration): an error wrapping
// offsets.ErrGenerationTaken if gen is not above the recorded one.
func (c *Cluster) RecordGeneration(ctx context.Context, group string, gen int32) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpGroupGeneration, Group: group, Generation: gen}))
}

// DeleteGroupOffsets deletes every committed offset of a group.
func (c *Cluster) DeleteGroupOffsets(ctx context.Context, group string) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpDeleteGroup, Group: group}))
}

// awaitLocal waits, within ctx (setupContext), until this node's
// reconciler has made the topic as the metadata says (or removed it, for
// a cfg with CreatedMs 0).
func (c *Cluster) awaitLocal(ctx context.Context, cfg partition.TopicConfig) error {
	c.kickReconcile()
	for {
		lc, err := c.o.Topics.Config(cfg.Name)
		switch {
		case cfg.CreatedMs == 0 && errors.Is(err, partition.ErrTopicNotFound):
			return nil
		case err == nil && lc == cfg:
			return nil
		}
		select {
		case <-ctx.Done():
			return kind.Errorf(kind.ErrUnavailable, "topic %q: the change is committed but this node has not applied it yet: retry to see it", cfg.Name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// loads counts each node's replicas and preferred leaderships.
func loads(st meta.State, without string) []replication.NodeLoad {
	m := map[string]*replication.NodeLoad{}
	for id := range st.Nodes {
		if id != without {
			m[id] = &replication.NodeLoad{ID: id}
		}
	}
	for _, t := range st.Topics {
		for _, set := range t.Replicas {
			for i, n := range set {
				if l, ok := m[n]; ok {
					l.Replicas++
					if i == 0 {
						l.Leaders++
					}
				}
			}
		}
	}
	out := make([]replication.NodeLoad, 0, len(m))
	for _, l := range m {
		out = append(out, *l)
	}
	return out
}

// RemoveNode removes a node from the cluster: each of its replicas moves
// to the least loaded other node (ReplaceNode), the partitions' leaders
// change their groups to match, and the node leaves the metadata group. It
// returns the partitions moved ("topic/partition").
func (c *Cluster) RemoveNode(ctx context.Context, id string) ([]string, error) {
	if err := c.OnMetaLeader(); err != nil {
		return nil, err
	}
	c.members.Lock()
	defer c.members.Unlock()
	st := c.State()
	if _, ok := st.Nodes[id]; !ok {
		return nil, kind.Errorf(ErrUnknownNode, "node %q is not a member (see `logd cluster status`)", id)
	}
	if len(st.Nodes) == 1 {
		return nil, kind.Errorf(kind.ErrFailedPrecondition, "node %q is the cluster's last node", id)
	}
	var moved []string
	others := loads(st, id)
	for _, name := range slices.Sorted(maps.Keys(st.Topics)) {
		t := st.Topics[name]
		sets, err := replication.ReplaceNode(t.Replicas, id, others)
		if err != nil {
			return nil, kind.Errorf(kind.ErrFailedPrecondition, "topic %q: %v: add a node first", name, err)
		}
		changed := false
		for i := range sets {
			if !slices.Equal(sets[i], t.Replicas[i]) {
				changed = true
				moved = append(moved, fmt.Sprintf("%s/%d", name, i))
			}
		}
		if !changed {
			continue
		}
		if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpSetReplicas, Name: name, Topic: &meta.Topic{Replicas: sets}}); err != nil {
			return nil, c.RaftError(err)
		}
		// The loads move with the placement, for the next topic.
		t.Replicas = sets
		st.Topics[name] = t
		others = loads(st, id)
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpRemoveNode, Name: id}); err != nil {
		return nil, c.RaftError(err)
	}
	if err := c.meta.RemoveServer(raft.ServerID(id)); err != nil {
		return nil, c.RaftError(err)
	}
	return moved, nil
}

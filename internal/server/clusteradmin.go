package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// The metadata writes of a cluster, run on the metadata leader (metaWrite
// brings them there). Each checks the request against the current state,
// decides what is not deterministic (creation time, placement) and applies
// one command; the nodes' reconcilers then create, alter or delete their
// local topics and replicas.

// defaultReplicas is a new topic's replica count when the request gives
// none: three, or every node of a smaller cluster.
const defaultReplicas = 3

func (c *cluster) createTopic(ctx context.Context, req *pb.CreateTopicRequest) (*pb.CreateTopicResponse, error) {
	st := c.meta.FSM.State()
	if _, ok := st.Topics[req.Name]; ok {
		return nil, toStatus(fmt.Errorf("%w: %q", partition.ErrTopicExists, req.Name))
	}
	if len(st.Nodes) == 0 {
		// Right after bootstrap the metadata group has a leader but no node
		// registered yet: not the request's fault, and over in a moment.
		return nil, status.Error(codes.Unavailable, "create topic: the cluster is still being set up (no node registered yet): retry")
	}
	replicas := req.Replicas
	if replicas == 0 {
		replicas = int32(min(defaultReplicas, len(st.Nodes)))
	}
	if replicas < 1 || int(replicas) > len(st.Nodes) {
		return nil, invalidArg("create topic: %d replicas asked, but the cluster has %d nodes: ask for 1 to %d", replicas, len(st.Nodes), len(st.Nodes))
	}
	cfg := partition.DefaultConfig(req.Name)
	cfg.Partitions = req.Partitions
	cfg.Replicas = replicas
	cfg = cfg.Apply(configChange(req.Config))
	cfg.CreatedMs = time.Now().UnixMilli()
	if err := cfg.Validate(); err != nil {
		return nil, toStatus(err)
	}
	sets, err := replication.PlaceReplicas(loads(st, ""), int(cfg.Partitions), int(replicas))
	if err != nil {
		return nil, invalidArg("create topic: %v", err)
	}
	t := meta.Topic{Config: cfg, Replicas: sets, Initial: sets}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpCreateTopic, Topic: &t}); err != nil {
		return nil, c.s.clusterStatus(err)
	}
	if err := c.awaitLocal(ctx, cfg); err != nil {
		return nil, err
	}
	return &pb.CreateTopicResponse{Topic: topicInfo(cfg)}, nil
}

// awaitLocal waits until this node's reconciler has made the topic as
// the metadata says (or removed it, for a nil cfg of name).
func (c *cluster) awaitLocal(ctx context.Context, cfg partition.TopicConfig) error {
	select {
	case c.kick <- struct{}{}:
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		lc, err := c.s.topics.Config(cfg.Name)
		switch {
		case cfg.CreatedMs == 0 && errors.Is(err, partition.ErrTopicNotFound):
			return nil
		case err == nil && lc == cfg:
			return nil
		}
		select {
		case <-ctx.Done():
			return status.Errorf(codes.Unavailable, "topic %q: the change is committed but this node has not applied it yet: retry to see it", cfg.Name)
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

func (c *cluster) alterTopic(ctx context.Context, req *pb.AlterTopicRequest) (*pb.AlterTopicResponse, error) {
	t, ok := c.meta.FSM.State().Topics[req.Name]
	if !ok {
		return nil, toStatus(fmt.Errorf("%w: %q", partition.ErrTopicNotFound, req.Name))
	}
	cfg := t.Config.Apply(configChange(req.Config))
	if err := cfg.Validate(); err != nil {
		return nil, toStatus(err)
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpAlterTopic, Name: req.Name, Topic: &meta.Topic{Config: cfg}}); err != nil {
		return nil, c.s.clusterStatus(err)
	}
	if err := c.awaitLocal(ctx, cfg); err != nil {
		return nil, err
	}
	return &pb.AlterTopicResponse{Topic: topicInfo(cfg)}, nil
}

func (c *cluster) deleteTopic(ctx context.Context, req *pb.DeleteTopicRequest) (*pb.DeleteTopicResponse, error) {
	if _, ok := c.meta.FSM.State().Topics[req.Name]; !ok {
		return nil, toStatus(fmt.Errorf("%w: %q", partition.ErrTopicNotFound, req.Name))
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpDeleteTopic, Name: req.Name}); err != nil {
		return nil, c.s.clusterStatus(err)
	}
	if err := c.awaitLocal(ctx, partition.TopicConfig{Name: req.Name}); err != nil {
		return nil, err
	}
	return &pb.DeleteTopicResponse{}, nil
}

// commitOffsets stores a group's offsets through the metadata group.
func (c *cluster) commitOffsets(ctx context.Context, group string, cs []offsets.Committed) error {
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpCommitOffsets, Group: group, Offsets: cs}); err != nil {
		return c.s.clusterStatus(err)
	}
	return nil
}

package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/routing"
)

// configChange parses Kafka config entries; a name logd does not have, or
// a value that does not parse, is an error naming it. A nil value keeps
// the default.
func configChange(entries []kmsg.CreateTopicsRequestTopicConfig) (broker.ConfigChange, error) {
	var ch broker.ConfigChange
	for _, e := range entries {
		if e.Value == nil {
			if err := setConfig(&broker.ConfigChange{}, e.Name, nil); err != nil {
				return ch, err
			}
			continue
		}
		if err := setConfig(&ch, e.Name, e.Value); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// handleCreateTopics creates each topic through the core. NumPartitions
// -1 means 1; ReplicationFactor -1 means the core's default. Explicit
// replica assignments are refused (INVALID_REPLICA_ASSIGNMENT): the core
// places replicas.
func handleCreateTopics(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, rt := range req.Topics {
		resp.Topics = append(resp.Topics, s.createTopic(r, req, rt))
	}
	return func() kmsg.Response { return resp }
}

func (s *Server) createTopic(r *request, req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
	t := kmsg.NewCreateTopicsResponseTopic()
	t.Topic = rt.Topic
	fail := func(code int16, err error) kmsg.CreateTopicsResponseTopic {
		t.ErrorCode, t.ErrorMessage = code, kmsg.StringPtr(err.Error())
		return t
	}
	if err := routing.ValidateTopicName(rt.Topic); err != nil {
		return fail(kerr.InvalidTopicException.Code, err)
	}
	if len(rt.ReplicaAssignment) > 0 {
		return fail(kerr.InvalidReplicaAssignment.Code, fmt.Errorf("logd places replicas itself: send ReplicationFactor, not a replica assignment"))
	}
	ch, err := configChange(rt.Configs)
	if err != nil {
		return fail(kerr.InvalidConfig.Code, err)
	}
	cfg := broker.DefaultConfig(rt.Topic).Apply(ch)
	cfg.Partitions, cfg.Replicas = rt.NumPartitions, int32(rt.ReplicationFactor)
	if rt.NumPartitions == -1 {
		cfg.Partitions = 1
	}
	if rt.ReplicationFactor == -1 {
		cfg.Replicas = 0
	}
	switch {
	case cfg.Partitions < 1 || cfg.Partitions > broker.MaxPartitions:
		return fail(kerr.InvalidPartitions.Code, fmt.Errorf("partitions must be between 1 and %d, got %d", broker.MaxPartitions, cfg.Partitions))
	case cfg.Replicas < 0:
		return fail(kerr.InvalidReplicationFactor.Code, fmt.Errorf("replication factor must be at least 1 (or -1 for the default), got %d", cfg.Replicas))
	}
	if req.ValidateOnly {
		check := cfg
		if check.Replicas == 0 {
			check.Replicas = 1
		}
		if err := check.Validate(); err != nil {
			return fail(kerr.InvalidConfig.Code, err)
		}
		if err := s.replicationFactorFits(r, check.Replicas); err != nil {
			return fail(kerr.InvalidReplicationFactor.Code, err)
		}
	} else {
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		created, err := s.core.CreateTopic(ctx, r.c.principal, cfg)
		cancel()
		if err != nil {
			if errors.Is(err, kind.ErrInvalidArgument) && s.replicationFactorFits(r, cfg.Replicas) != nil {
				return fail(kerr.InvalidReplicationFactor.Code, err)
			}
			return fail(r.adminCode(err), err)
		}
		cfg = created
	}
	t.NumPartitions, t.ReplicationFactor = cfg.Partitions, int16(cfg.Replicas)
	cfg = s.withNodeLimits(cfg)
	for _, tc := range broker.TopicSettings {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = tc.Name, kmsg.StringPtr(tc.Value(cfg))
		c.Source = 5 // DEFAULT_CONFIG
		if tc.IsSet(ch) {
			c.Source = 1 // DYNAMIC_TOPIC_CONFIG
		}
		t.Configs = append(t.Configs, c)
	}
	return t
}

// replicationFactorFits is nil when replicas is at most the node count; a
// request the core refuses for more replicas than nodes is
// INVALID_REPLICATION_FACTOR, as Kafka answers for more than its brokers.
// It is asked after the core refused (authorization first, as in Kafka).
func (s *Server) replicationFactorFits(r *request, replicas int32) error {
	nodes, err := s.core.Nodes(r.ctx)
	if err != nil || int(replicas) <= len(nodes) {
		return nil
	}
	return fmt.Errorf("replication factor %d is larger than the %d nodes of the cluster", replicas, len(nodes))
}

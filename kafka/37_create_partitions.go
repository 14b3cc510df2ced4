package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// handleCreatePartitions grows each topic to Count partitions (the new
// total) through the core. Explicit replica assignments are refused
// (INVALID_REPLICA_ASSIGNMENT: logd places replicas); a count that is not
// above the topic's current one is INVALID_PARTITIONS; a topic named twice
// is INVALID_REQUEST.
func handleCreatePartitions(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	return func() kmsg.Response {
		times := map[string]int{}
		for _, rt := range req.Topics {
			times[rt.Topic]++
		}
		for _, rt := range req.Topics {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic = rt.Topic
			var code int16
			var err error
			if times[rt.Topic] > 1 {
				code, err = kerr.InvalidRequest.Code, fmt.Errorf("topic %q is named %d times", rt.Topic, times[rt.Topic])
			} else {
				code, err = s.createPartitions(r, req, rt)
			}
			if err != nil {
				t.ErrorCode, t.ErrorMessage = code, kmsg.StringPtr(err.Error())
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

func (s *Server) createPartitions(r *request, req *kmsg.CreatePartitionsRequest, rt kmsg.CreatePartitionsRequestTopic) (int16, error) {
	if rt.Assignment != nil {
		return kerr.InvalidReplicaAssignment.Code, errors.New("logd places replicas itself: send only the new partition count, not an assignment")
	}
	ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
	defer cancel()
	topics, err := s.core.TopicConfigs(ctx, r.c.principal)
	if err != nil {
		return r.adminCode(err), err
	}
	cfg, ok := findTopic(topics, rt.Topic)
	switch {
	case !ok:
		return kerr.UnknownTopicOrPartition.Code, fmt.Errorf("topic %q does not exist", rt.Topic)
	case rt.Count <= cfg.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Errorf("topic %q has %d partitions: the count must be more (partitions are only added)", rt.Topic, cfg.Partitions)
	case rt.Count > broker.MaxPartitions:
		return kerr.InvalidPartitions.Code, fmt.Errorf("a topic has at most %d partitions, asked for %d", broker.MaxPartitions, rt.Count)
	case req.ValidateOnly:
		return 0, nil
	}
	if _, err := s.core.AddPartitions(ctx, r.c.principal, rt.Topic, rt.Count); err != nil {
		if errors.Is(err, kind.ErrFailedPrecondition) && s.replicationFactorFits(r, cfg.Replicas) != nil {
			return kerr.InvalidReplicationFactor.Code, err
		}
		if errors.Is(err, kind.ErrInvalidArgument) || errors.Is(err, broker.ErrInvalidConfig) {
			return kerr.InvalidPartitions.Code, err
		}
		return r.adminCode(err), err
	}
	return 0, nil
}

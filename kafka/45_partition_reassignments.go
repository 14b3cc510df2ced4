package kafka

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// handleAlterPartitionReassignments moves partitions to the replicas
// named (Kafka broker ids, the preferred leader first) through the core,
// which moves them with the cluster's own machinery in the background:
// alter on the cluster. A set that is not as many live brokers as the
// topic's replication factor is INVALID_REPLICA_ASSIGNMENT; so is a
// cancellation (no replicas): logd does not cancel a move (move the
// partition back instead).
func handleAlterPartitionReassignments(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	return func() kmsg.Response {
		ac := s.adminCore()
		if ac == nil {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		defer cancel()
		nodes, err := s.core.Nodes(ctx)
		if err != nil {
			resp.ErrorCode = r.errorCode(err)
			return resp
		}
		ids := map[int32]string{}
		for _, n := range nodes {
			ids[n.KafkaID] = n.ID
		}
		var moves []broker.PartitionMove
		var pre []error // refused here, before the core
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				m, err := partitionMove(rt.Topic, rp, ids)
				moves, pre = append(moves, m), append(pre, err)
			}
		}
		errs, err := ac.MovePartitions(ctx, r.c.principal, movable(moves, pre))
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
			return resp
		}
		reassignAnswer(r, resp, req, pre, errs)
		return resp
	}
}

// partitionMove is rp's move, or why it is refused before the core.
func partitionMove(topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, ids map[int32]string) (broker.PartitionMove, error) {
	m := broker.PartitionMove{Topic: topic, Partition: rp.Partition}
	if rp.Replicas == nil {
		return m, kind.Errorf(kind.ErrInvalidArgument, "logd does not cancel a partition move: move the partition back to the replicas it had")
	}
	for _, id := range rp.Replicas {
		n, ok := ids[id]
		if !ok {
			return m, kind.Errorf(kind.ErrInvalidArgument, "broker %d is not a member of the cluster", id)
		}
		m.Replicas = append(m.Replicas, n)
	}
	return m, nil
}

// movable is the moves not refused before the core.
func movable(moves []broker.PartitionMove, pre []error) []broker.PartitionMove {
	var out []broker.PartitionMove
	for i, m := range moves {
		if pre[i] == nil {
			out = append(out, m)
		}
	}
	return out
}

func reassignAnswer(r *request, resp *kmsg.AlterPartitionAssignmentsResponse, req *kmsg.AlterPartitionAssignmentsRequest, pre, errs []error) {
	i, j := 0, 0
	for _, rt := range req.Topics {
		t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition = rp.Partition
			err := pre[i]
			if err == nil {
				err = errs[j]
				j++
			}
			i++
			if err != nil {
				p.ErrorCode, p.ErrorMessage = moveCode(r, err), kmsg.StringPtr(err.Error())
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
}

func moveCode(r *request, err error) int16 {
	switch {
	case errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, kind.ErrInvalidArgument):
		return kerr.InvalidReplicaAssignment.Code
	}
	return r.adminCode(err)
}

// handleListPartitionReassignments lists the partitions being moved (of
// the topics named, or all), as the answering node knows them: describe
// on the cluster.
func handleListPartitionReassignments(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	return func() kmsg.Response {
		ac := s.adminCore()
		if ac == nil {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		defer cancel()
		moves, err := ac.PartitionMoves(ctx, r.c.principal)
		nodes, nerr := s.core.Nodes(ctx)
		if err == nil {
			err = nerr
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
			return resp
		}
		listMoves(resp, req, moves, nodes)
		return resp
	}
}

func listMoves(resp *kmsg.ListPartitionReassignmentsResponse, req *kmsg.ListPartitionReassignmentsRequest, moves []broker.PartitionMove, nodes []Node) {
	ids := map[string]int32{}
	for _, n := range nodes {
		ids[n.ID] = n.KafkaID
	}
	asked := func(topic string, p int32) bool {
		if req.Topics == nil {
			return true
		}
		for _, rt := range req.Topics {
			if rt.Topic == topic && (rt.Partitions == nil || slices.Contains(rt.Partitions, p)) {
				return true
			}
		}
		return false
	}
	byTopic := map[string]int{}
	for _, m := range moves {
		if !asked(m.Topic, m.Partition) {
			continue
		}
		j, ok := byTopic[m.Topic]
		if !ok {
			j = len(resp.Topics)
			byTopic[m.Topic] = j
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = m.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition = m.Partition
		for _, n := range m.Replicas {
			p.Replicas = append(p.Replicas, ids[n])
			if !contains(m.Voters, n) {
				p.AddingReplicas = append(p.AddingReplicas, ids[n])
			}
		}
		for _, n := range m.Voters {
			if !contains(m.Replicas, n) {
				p.Replicas = append(p.Replicas, ids[n])
				p.RemovingReplicas = append(p.RemovingReplicas, ids[n])
			}
		}
		resp.Topics[j].Partitions = append(resp.Topics[j].Partitions, p)
	}
}

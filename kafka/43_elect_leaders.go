package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// handleElectLeaders elects the leaders of the partitions named (all, when
// none is) through the core: alter on the cluster. A preferred election
// moves a partition's leadership to its first replica;
// ELECTION_NOT_NEEDED when that replica leads it already (every partition
// of a node that runs alone), PREFERRED_LEADER_NOT_AVAILABLE when it
// cannot take over. An unclean election is ELECTION_NOT_NEEDED for a
// partition with a leader and ELIGIBLE_LEADERS_NOT_AVAILABLE for one
// without (Raft elects among the replicas holding every committed record
// only). Asked for every partition, the answer leaves out those that
// needed no election, as Kafka's does.
func handleElectLeaders(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	return func() kmsg.Response {
		ac := s.adminCore()
		if ac == nil {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		defer cancel()
		all := req.Topics == nil
		var parts []broker.ElectionPartition
		if all {
			topics, err := s.core.TopicLayouts(ctx, r.c.principal)
			if err != nil {
				resp.ErrorCode = r.errorCode(err)
				return resp
			}
			for _, t := range topics {
				for _, p := range t.Partitions {
					parts = append(parts, broker.ElectionPartition{Topic: t.Config.Name, Partition: p.ID})
				}
			}
		}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, broker.ElectionPartition{Topic: rt.Topic, Partition: p})
			}
		}
		preferred := req.Version == 0 || req.ElectionType == 0
		errs, err := ac.ElectLeaders(ctx, r.c.principal, preferred, parts)
		if err != nil && req.Version > 0 {
			resp.ErrorCode = r.errorCode(err)
			return resp
		}
		if err != nil {
			// v0 has no request-wide error: each partition carries it.
			errs = make([]error, len(parts))
			for i := range errs {
				errs[i] = err
			}
		}
		electionAnswer(r, resp, parts, errs, preferred, all)
		return resp
	}
}

func electionAnswer(r *request, resp *kmsg.ElectLeadersResponse, parts []broker.ElectionPartition, errs []error, preferred, all bool) {
	byTopic := map[string]int{}
	for i, ep := range parts {
		code := electionCode(r, errs[i], preferred)
		if all && code == kerr.ElectionNotNeeded.Code {
			continue
		}
		j, ok := byTopic[ep.Topic]
		if !ok {
			j = len(resp.Topics)
			byTopic[ep.Topic] = j
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = ep.Topic
			resp.Topics = append(resp.Topics, t)
		}
		pr := kmsg.NewElectLeadersResponseTopicPartition()
		pr.Partition, pr.ErrorCode = ep.Partition, code
		if errs[i] != nil {
			pr.ErrorMessage = kmsg.StringPtr(errs[i].Error())
		}
		resp.Topics[j].Partitions = append(resp.Topics[j].Partitions, pr)
	}
}

// electionCode maps an election's error. A "not needed" another node
// answered arrives as its kind, kind.ErrFailedPrecondition.
func electionCode(r *request, err error, preferred bool) int16 {
	var nl *NotLeaderError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, broker.ErrElectionNotNeeded), errors.Is(err, kind.ErrFailedPrecondition):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case !errors.Is(err, ErrDenied) && (errors.As(err, &nl) || errors.Is(err, kind.ErrUnavailable) || errors.Is(err, kind.ErrNoLeader)):
		if preferred {
			return kerr.PreferredLeaderNotAvailable.Code
		}
		return kerr.EligibleLeadersNotAvailable.Code
	}
	return r.errorCode(err)
}

package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// handleConsumerGroupHeartbeat joins, keeps or removes a member of a
// server-assigned consumer group (KIP-848; docs/groups.md).
func handleConsumerGroupHeartbeat(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	return func() kmsg.Response {
		cc, ok := s.core.(consumerCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		hr := broker.ConsumerHeartbeatRequest{
			Principal: r.c.principal, Group: req.Group, Member: req.MemberID, MemberEpoch: req.MemberEpoch,
			InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeout: -1,
			Topics: req.SubscribedTopicNames, Regex: req.SubscribedTopicRegex, Assignor: req.ServerAssignor,
			ClientID: r.hdr.clientID, ClientHost: r.c.remoteHost,
		}
		if req.RebalanceTimeoutMillis >= 0 {
			hr.RebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		}
		if req.Topics != nil {
			hr.Owned = []broker.ConsumerTopicPartitions{}
			for _, t := range req.Topics {
				hr.Owned = append(hr.Owned, broker.ConsumerTopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
		res, err := cc.ConsumerHeartbeat(r.ctx, hr)
		resp.ErrorCode, resp.ErrorMessage = r.consumerErr(res.Code, res.Message, err)
		if resp.ErrorCode != 0 {
			return resp
		}
		resp.MemberID = kmsg.StringPtr(req.MemberID)
		resp.MemberEpoch = res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(res.Interval.Milliseconds())
		if res.Assignment != nil {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, t := range res.Assignment {
				at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				at.TopicID, at.Partitions = t.TopicID, t.Partitions
				a.Topics = append(a.Topics, at)
			}
			resp.Assignment = &a
		}
		return resp
	}
}

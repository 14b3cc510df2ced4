package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// handleConsumerGroupDescribe describes server-assigned consumer groups:
// state, epochs, assignor, members with their subscriptions, current and
// target assignments. A group the coordinator does not hold is answered
// GROUP_ID_NOT_FOUND, as Kafka does.
func handleConsumerGroupDescribe(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	return func() kmsg.Response {
		cc, ok := s.core.(consumerCore)
		for _, id := range req.Groups {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group = id
			if !ok {
				g.ErrorCode = kerr.UnsupportedVersion.Code
			} else {
				describeConsumerGroup(r, cc, &g)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

func describeConsumerGroup(r *request, cc consumerCore, g *kmsg.ConsumerGroupDescribeResponseGroup) {
	d, err := cc.DescribeConsumerGroup(r.ctx, r.c.principal, g.Group)
	if err != nil {
		g.ErrorCode, g.ErrorMessage = r.consumerErr(0, "", err)
		return
	}
	if d.State == "Dead" {
		g.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "group " + g.Group + " is not a consumer group here"
		g.ErrorMessage = &msg
		return
	}
	g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
	for _, m := range d.Members {
		km := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		km.MemberID, km.MemberEpoch, km.ClientID, km.ClientHost = m.Member, m.MemberEpoch, m.ClientID, m.ClientHost
		km.MemberType = 1
		if m.InstanceID != "" {
			km.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		if m.Rack != "" {
			km.RackID = kmsg.StringPtr(m.Rack)
		}
		km.SubscribedTopics = m.Topics
		if m.Regex != "" {
			km.SubscribedTopicRegex = kmsg.StringPtr(m.Regex)
		}
		km.Assignment = kafkaAssignment(m.Assignment)
		km.TargetAssignment = kafkaAssignment(m.Target)
		g.Members = append(g.Members, km)
	}
}

func kafkaAssignment(ts []broker.ConsumerTopicPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, t.Topic, t.Partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

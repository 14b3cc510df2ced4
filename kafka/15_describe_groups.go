package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleDescribeGroups describes each group the principal may describe
// from the coordinator; a group it does not hold is reported in state
// "Dead" with no error, as Kafka does. A KIP-848 consumer group is
// described as Kafka describes one to a classic client: protocol type
// "consumer", its assignor as the protocol, its own state, and each
// member with its subscription and assignment in the classic consumer
// protocol's encodings.
func handleDescribeGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	return func() kmsg.Response {
		for _, name := range req.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group = name
			d, err := s.core.DescribeGroup(r.ctx, r.c.principal, name)
			switch {
			case errors.Is(err, groups.ErrGroupNotFound):
				g.State = groups.Dead.String()
				if cc, ok := s.core.(consumerCore); ok {
					g = r.describeConsumerAsClassic(cc, name, g)
				}
			case err != nil:
				g.ErrorCode = r.groupCode(err)
			default:
				g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
				for _, m := range d.Members {
					gm := kmsg.NewDescribeGroupsResponseGroupMember()
					gm.MemberID, gm.ClientID, gm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
					gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
					g.Members = append(g.Members, gm)
				}
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

// describeConsumerAsClassic fills g in from the server-assigned group of
// that name, if there is one (g unchanged otherwise).
func (r *request) describeConsumerAsClassic(cc consumerCore, name string, g kmsg.DescribeGroupsResponseGroup) kmsg.DescribeGroupsResponseGroup {
	d, err := cc.DescribeConsumerGroup(r.ctx, r.c.principal, name)
	if err != nil {
		g.ErrorCode = r.groupCode(err)
		return g
	}
	if d.State == groups.Dead.String() {
		return g
	}
	g.State, g.ProtocolType, g.Protocol = d.State, groups.ConsumerProtocolType, d.Assignor
	for _, m := range d.Members {
		gm := kmsg.NewDescribeGroupsResponseGroupMember()
		gm.MemberID, gm.ClientID, gm.ClientHost = m.Member, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			gm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version, meta.Topics = 3, m.Topics
		if m.Rack != "" {
			meta.Rack = kmsg.StringPtr(m.Rack)
		}
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 3
		for _, t := range m.Assignment {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = t.Topic, t.Partitions
			a.Topics = append(a.Topics, at)
			ot := kmsg.NewConsumerMemberMetadataOwnedPartition()
			ot.Topic, ot.Partitions = t.Topic, t.Partitions
			meta.OwnedPartitions = append(meta.OwnedPartitions, ot)
		}
		meta.Generation = m.MemberEpoch
		gm.ProtocolMetadata, gm.MemberAssignment = meta.AppendTo(nil), a.AppendTo(nil)
		g.Members = append(g.Members, gm)
	}
	return g
}

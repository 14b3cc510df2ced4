package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleShareGroupDescribe describes share groups: state, epoch, members
// with their subscriptions and assignments. A group never used is
// answered GROUP_ID_NOT_FOUND, as Kafka does.
func handleShareGroupDescribe(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareCore)
		for _, id := range req.GroupIDs {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID = id
			resp.Groups = append(resp.Groups, g)
			gr := &resp.Groups[len(resp.Groups)-1]
			if !ok {
				gr.ErrorCode = kerr.UnsupportedVersion.Code
				continue
			}
			d, err := sc.DescribeShareGroup(r.ctx, r.c.principal, id)
			if err != nil {
				gr.ErrorCode, gr.ErrorMessage = r.shareErr(0, "", err)
				continue
			}
			if d.State == "Dead" {
				gr.ErrorCode = kerr.GroupIDNotFound.Code
				continue
			}
			gr.GroupState, gr.GroupEpoch, gr.AssignmentEpoch, gr.Assignor = d.State, d.Epoch, d.Epoch, "simple"
			gr.AuthorizedOperations = -2147483648
			for _, m := range d.Members {
				km := kmsg.NewShareGroupDescribeResponseGroupMember()
				km.MemberID, km.MemberEpoch, km.ClientID, km.ClientHost = m.Member, m.MemberEpoch, m.ClientID, m.ClientHost
				km.SubscribedTopicNames = m.Topics
				for _, a := range m.Assignment {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID, tp.Topic, tp.Partitions = a.TopicID, a.Topic, a.Partitions
					km.Assignment.TopicPartitions = append(km.Assignment.TopicPartitions, tp)
				}
				gr.Members = append(gr.Members, km)
			}
		}
		return resp
	}
}

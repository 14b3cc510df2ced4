package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// handleShareGroupHeartbeat joins, keeps or removes a share group member
// (KIP-932; the assignment is the server's, docs/share-groups.md).
func handleShareGroupHeartbeat(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		res, err := sc.ShareHeartbeat(r.ctx, broker.ShareHeartbeatRequest{
			Principal: r.c.principal, Group: req.GroupID, Member: req.MemberID, MemberEpoch: req.MemberEpoch,
			Topics: req.SubscribedTopicNames, ClientID: r.hdr.clientID, ClientHost: r.c.remoteHost,
		})
		resp.ErrorCode, resp.ErrorMessage = r.shareErr(res.Code, res.Message, err)
		if resp.ErrorCode != 0 {
			return resp
		}
		resp.MemberID = kmsg.StringPtr(req.MemberID)
		resp.MemberEpoch = res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(res.Interval.Milliseconds())
		if res.Assignment != nil {
			a := kmsg.NewShareGroupHeartbeatResponseAssignment()
			for _, t := range res.Assignment {
				tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
				tp.TopicID, tp.Partitions = t.TopicID, t.Partitions
				a.TopicPartitions = append(a.TopicPartitions, tp)
			}
			resp.Assignment = &a
		}
		return resp
	}
}

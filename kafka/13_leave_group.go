package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleLeaveGroup removes the member (v0-v2) or each member of the batch
// (v3+) from the group, which rebalances at once.
func handleLeaveGroup(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	return func() kmsg.Response {
		member, err := s.core.GroupMember(r.ctx, r.c.principal, req.Group)
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		if req.Version < 3 {
			resp.ErrorCode = r.groupCode(member.Leave(req.MemberID))
			return resp
		}
		for _, m := range req.Members {
			lm := kmsg.NewLeaveGroupResponseMember()
			lm.MemberID, lm.InstanceID = m.MemberID, m.InstanceID
			lm.ErrorCode = r.groupCode(member.Leave(m.MemberID))
			resp.Members = append(resp.Members, lm)
		}
		return resp
	}
}

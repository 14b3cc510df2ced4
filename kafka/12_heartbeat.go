package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleHeartbeat keeps a member alive; REBALANCE_IN_PROGRESS tells it to
// re-join.
func handleHeartbeat(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	return func() kmsg.Response {
		member, err := s.core.GroupMember(r.ctx, r.c.principal, req.Group)
		if err == nil {
			err = member.Heartbeat(req.MemberID, req.Generation)
		}
		resp.ErrorCode = r.groupCode(err)
		return resp
	}
}

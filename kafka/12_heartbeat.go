package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// handleHeartbeat keeps a member alive; REBALANCE_IN_PROGRESS tells it to
// re-join.
func handleHeartbeat(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	return func() kmsg.Response {
		coord, err := s.groupCoordinator(r, auth.OpRead, req.Group)
		if err == nil {
			err = coord.Heartbeat(req.Group, req.MemberID, req.Generation)
		}
		resp.ErrorCode = r.groupCode(err)
		return resp
	}
}

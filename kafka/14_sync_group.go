package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleSyncGroup hands the leader's assignment to the coordinator and
// answers each member with its share; it blocks until the assignment is
// known.
func handleSyncGroup(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	return func() kmsg.Response {
		member, err := s.core.GroupMember(r.ctx, r.c.principal, req.Group)
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		sr := groups.SyncRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
		if req.ProtocolType != nil {
			sr.ProtocolType = *req.ProtocolType
		}
		if req.Protocol != nil {
			sr.Protocol = *req.Protocol
		}
		if len(req.GroupAssignment) > 0 {
			sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
			for _, a := range req.GroupAssignment {
				sr.Assignments[a.MemberID] = a.MemberAssignment
			}
		}
		res, err := member.Sync(r.ctx, sr)
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(res.ProtocolType), kmsg.StringPtr(res.Protocol)
		resp.MemberAssignment = res.Assignment
		return resp
	}
}

package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleJoinGroup joins a member through the group coordinator; it blocks
// until the generation is formed. A first join gets its member id in the
// answer (never MEMBER_ID_REQUIRED); group.instance.id is ignored (static
// membership is not implemented: the member is dynamic).
func handleJoinGroup(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	return func() kmsg.Response {
		resp.Generation, resp.MemberID = -1, req.MemberID
		member, err := s.core.GroupMember(r.ctx, r.c.principal, req.Group)
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		jr := groups.JoinRequest{
			Group: req.Group, MemberID: req.MemberID,
			ClientID: r.hdr.clientID, ClientHost: r.c.remoteHost,
			SessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
			RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
			ProtocolType:     req.ProtocolType,
		}
		if req.Version == 0 {
			jr.RebalanceTimeout = jr.SessionTimeout
		}
		for _, p := range req.Protocols {
			jr.Protocols = append(jr.Protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
		}
		res, err := member.Join(r.ctx, jr)
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		resp.MemberID, resp.Generation, resp.LeaderID = res.MemberID, res.Generation, res.Leader
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(res.ProtocolType), kmsg.StringPtr(res.Protocol)
		for _, m := range res.Members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.ProtocolMetadata = m.MemberID, m.Metadata
			resp.Members = append(resp.Members, jm)
		}
		return resp
	}
}

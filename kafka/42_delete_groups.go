package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteGroups deletes each group through the core: the coordinator
// forgets it and its committed offsets are deleted. A group with members
// gets NON_EMPTY_GROUP and keeps everything, as in Kafka; one that neither
// has members nor committed offsets gets GROUP_ID_NOT_FOUND.
func handleDeleteGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	return func() kmsg.Response {
		for _, group := range req.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group = group
			ctx, cancel := contextWithTimeout(r, 0)
			err := s.core.DeleteGroup(ctx, r.c.principal, group)
			cancel()
			if err != nil {
				g.ErrorCode, g.ErrorMessage = r.groupCode(err), kmsg.StringPtr(err.Error())
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleListGroups lists the coordinator's groups and the groups that only
// have committed offsets (state Empty, protocol type "consumer"), those
// the principal may describe, filtered by state (v4+) when the request
// names states. As in Kafka, each broker lists the groups it coordinates:
// a node that does not run the group coordinator lists none, without an
// error (admin clients ask every broker and fail on any error).
func handleListGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, 0)
		list, err := s.core.ListMemberGroups(ctx, r.c.principal)
		cancel()
		var nc *NotCoordinatorError
		if errors.As(err, &nc) {
			return resp
		}
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		for _, l := range list {
			protocolType, state := l.ProtocolType, l.State.String()
			if l.OffsetsOnly {
				protocolType = groups.ConsumerProtocolType
			}
			if len(req.StatesFilter) > 0 && !contains(req.StatesFilter, state) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState = l.Group, protocolType, state
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

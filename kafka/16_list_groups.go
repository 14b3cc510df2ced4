package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
)

// handleListGroups lists the coordinator's groups and the groups that only
// have committed offsets (state Empty, protocol type "consumer"), filtered
// by state (v4+) when the request names states. As in Kafka, each broker
// lists the groups it coordinates: a node that does not run the group
// coordinator lists none, without an error (admin clients ask every
// broker and fail on any error).
func handleListGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	return func() kmsg.Response {
		coord, err := s.core.Coordinator()
		var nc *NotCoordinatorError
		if errors.As(err, &nc) {
			return resp
		}
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		list, err := coord.List()
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		ctx, cancel := contextWithTimeout(r, 0)
		committed, err := s.core.ListGroups(ctx, r.c.principal)
		cancel()
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		add := func(group, protocolType, state string) {
			if len(req.StatesFilter) > 0 && !contains(req.StatesFilter, state) {
				return
			}
			if !s.core.Allowed(r.c.principal, auth.OpDescribe, auth.Group(group)) {
				return // listings leave out what the principal may not describe
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState = group, protocolType, state
			resp.Groups = append(resp.Groups, g)
		}
		held := map[string]bool{}
		for _, l := range list {
			held[l.Group] = true
			add(l.Group, l.ProtocolType, l.State.String())
		}
		for _, group := range committed {
			if !held[group] {
				add(group, groups.ConsumerProtocolType, groups.Empty.String())
			}
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

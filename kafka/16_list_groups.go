package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListGroups lists the coordinator's groups, filtered by state (v4+)
// when the request names states.
func handleListGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	return func() kmsg.Response {
		coord, err := s.core.Coordinator()
		if err != nil {
			resp.ErrorCode = groupCode(err)
			return resp
		}
		list, err := coord.List()
		if err != nil {
			resp.ErrorCode = groupCode(err)
			return resp
		}
		for _, l := range list {
			state := l.State.String()
			if len(req.StatesFilter) > 0 && !contains(req.StatesFilter, state) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState = l.Group, l.ProtocolType, state
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

package kafka

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleListGroups lists the coordinator's groups (KIP-848's consumer
// groups with their own states and, v5+, group type "consumer"; the
// others "classic") and the groups that only have committed offsets
// (state Empty, protocol type "consumer"), those the principal may
// describe, filtered by state (v4+) and type (v5+) when the request names
// them. As in Kafka, each broker lists the groups it coordinates:
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
			protocolType, state, typ := l.ProtocolType, l.State.String(), "classic"
			if l.OffsetsOnly {
				protocolType = groups.ConsumerProtocolType
			}
			if l.ConsumerState != "" {
				state, typ = l.ConsumerState, "consumer"
			}
			if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, state) ||
				len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, typ) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, protocolType, state, typ
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

// containsFold reports whether ss holds s, in any case (Kafka matches
// ListGroups' filters so).
func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

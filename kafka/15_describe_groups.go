package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/groups"
)

// handleDescribeGroups describes each group the principal may describe
// from the coordinator; a group it does not hold is reported in state
// "Dead" with no error, as Kafka does.
func handleDescribeGroups(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	return func() kmsg.Response {
		for _, name := range req.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group = name
			d, err := s.core.DescribeGroup(r.ctx, r.c.principal, name)
			switch {
			case errors.Is(err, groups.ErrGroupNotFound):
				g.State = groups.Dead.String()
			case err != nil:
				g.ErrorCode = r.groupCode(err)
			default:
				g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
				for _, m := range d.Members {
					gm := kmsg.NewDescribeGroupsResponseGroupMember()
					gm.MemberID, gm.ClientID, gm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
					gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
					g.Members = append(g.Members, gm)
				}
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

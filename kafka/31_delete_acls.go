package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// handleDeleteAcls deletes, for each filter, the ACLs it matches through
// the core (alter on the cluster) and answers them. A filter with pattern
// MATCH deletes every ACL that applies to the named resource: they are
// listed, then each is removed by an exact filter.
func handleDeleteAcls(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	return func() kmsg.Response {
		for _, kf := range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			removed, err := s.deleteACLs(r, kf)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = r.aclCode(err), kmsg.StringPtr(err.Error())
			}
			for _, a := range removed {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType = kafkaEnum(aclResourceTypes, a.ResourceType)
				m.ResourcePatternType = kafkaEnum(aclPatterns, a.PatternType)
				m.ResourceName = a.Name
				m.Principal, m.Host = a.Principal.String(), "*"
				m.Operation = kafkaEnum(aclOperations, a.Operation)
				m.PermissionType = kafkaEnum(aclPermissions, a.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
}

func (s *Server) deleteACLs(r *request, kf kmsg.DeleteACLsRequestFilter) ([]auth.ACL, error) {
	f, err := kafkaFilter(kf.ResourceType, kf.ResourceName, kf.ResourcePatternType, kf.Principal, kf.Host, kf.Operation, kf.PermissionType)
	if err != nil {
		return nil, err
	}
	ctx, cancel := contextWithTimeout(r, 0)
	defer cancel()
	if f.match == nil {
		return s.core.RemoveACLs(ctx, r.c.principal, f.f)
	}
	acls, err := s.core.ListACLs(ctx, r.c.principal, f.f)
	if err != nil {
		return nil, err
	}
	var removed []auth.ACL
	for _, a := range acls {
		if !f.keep(a) {
			continue
		}
		gone, err := s.core.RemoveACLs(ctx, r.c.principal, auth.ExactFilter(a))
		if err != nil {
			return removed, err
		}
		removed = append(removed, gone...)
	}
	return removed, nil
}

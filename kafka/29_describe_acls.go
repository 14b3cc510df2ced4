package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// handleDescribeAcls lists the ACLs the filter matches, through the core
// (describe on the cluster), grouped by resource as Kafka answers. Pattern
// MATCH returns every ACL that applies to the named resource: its literal
// name, the wildcard and the prefixes of the name.
func handleDescribeAcls(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	return func() kmsg.Response {
		acls, err := s.describeACLs(r, req)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.aclCode(err), kmsg.StringPtr(err.Error())
			return resp
		}
		resp.Resources = aclResources(acls)
		return resp
	}
}

func (s *Server) describeACLs(r *request, req *kmsg.DescribeACLsRequest) ([]auth.ACL, error) {
	f, err := kafkaFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err != nil {
		return nil, err
	}
	ctx, cancel := contextWithTimeout(r, 0)
	defer cancel()
	acls, err := s.core.ListACLs(ctx, r.c.principal, f.f)
	if err != nil {
		return nil, err
	}
	kept := acls[:0]
	for _, a := range acls {
		if f.keep(a) {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// aclResources groups sorted ACLs by resource (type, name, pattern).
func aclResources(acls []auth.ACL) []kmsg.DescribeACLsResponseResource {
	type key struct {
		rt   auth.ResourceType
		pt   auth.PatternType
		name string
	}
	var out []kmsg.DescribeACLsResponseResource
	index := map[key]int{}
	for _, a := range acls {
		k := key{a.ResourceType, a.PatternType, a.Name}
		i, ok := index[k]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kafkaEnum(aclResourceTypes, a.ResourceType)
			res.ResourcePatternType = kafkaEnum(aclPatterns, a.PatternType)
			res.ResourceName = a.Name
			i = len(out)
			index[k] = i
			out = append(out, res)
		}
		d := kmsg.NewDescribeACLsResponseResourceACL()
		d.Principal, d.Host = a.Principal.String(), "*"
		d.Operation = kafkaEnum(aclOperations, a.Operation)
		d.PermissionType = kafkaEnum(aclPermissions, a.Permission)
		out[i].ACLs = append(out[i].ACLs, d)
	}
	return out
}

package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// handleCreateAcls stores the creations through the core (alter on the
// cluster). Each creation logd cannot express (a resource type, operation
// or host it does not have) gets INVALID_REQUEST with a message; the
// others are stored together, all or none, and share the core's answer.
func handleCreateAcls(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	return func() kmsg.Response {
		resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
		var acls []auth.ACL
		var valid []int
		for i, c := range req.Creations {
			resp.Results[i] = kmsg.NewCreateACLsResponseResult()
			a, err := kafkaACL(c)
			if err != nil {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = r.aclCode(err), kmsg.StringPtr(err.Error())
				continue
			}
			acls, valid = append(acls, a), append(valid, i)
		}
		if len(acls) == 0 {
			return resp
		}
		ctx, cancel := contextWithTimeout(r, 0)
		err := s.core.AddACLs(ctx, r.c.principal, acls...)
		cancel()
		if err != nil {
			for _, i := range valid {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = r.aclCode(err), kmsg.StringPtr(err.Error())
			}
		}
		return resp
	}
}

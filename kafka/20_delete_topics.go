package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteTopics deletes each named topic through the core.
func handleDeleteTopics(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		defer cancel()
		for _, name := range req.TopicNames {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic = kmsg.StringPtr(name)
			if err := s.core.DeleteTopic(ctx, r.c.principal, name); err != nil {
				t.ErrorCode, t.ErrorMessage = r.adminCode(err), kmsg.StringPtr(err.Error())
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

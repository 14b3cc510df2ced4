package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/offsets"
)

// handleOffsetDelete deletes a group's committed offsets of the partitions
// named, through the core: delete on the group (GROUP_AUTHORIZATION_FAILED
// for the whole request), read on each topic (TOPIC_AUTHORIZATION_FAILED
// for its partitions). A topic a member of the group subscribes to is
// GROUP_SUBSCRIBED_TO_TOPIC and keeps its offsets; a group with members of
// another protocol NON_EMPTY_GROUP; one with neither members nor offsets
// GROUP_ID_NOT_FOUND, as in Kafka.
func handleOffsetDelete(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	return func() kmsg.Response {
		var parts []offsets.Committed
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, offsets.Committed{Topic: rt.Topic, Partition: p.Partition})
			}
		}
		ac := s.adminCore()
		if ac == nil {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp
		}
		ctx, cancel := contextWithTimeout(r, 0)
		errs, err := ac.DeleteOffsets(ctx, r.c.principal, req.Group, parts)
		cancel()
		if err != nil {
			resp.ErrorCode = r.groupCode(err)
			return resp
		}
		i := 0
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetDeleteResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, r.topicCode(errs[i])
				i++
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/offsets"
)

// handleOffsetCommit stores a group's offsets through the core, which
// fences the commit with the coordinator (member id and generation; a
// consumer that assigns itself partitions commits with "" and -1). The
// request is stored all or nothing, so every partition gets the same code.
func handleOffsetCommit(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	return func() kmsg.Response {
		gen, member := req.Generation, req.MemberID
		if req.Version == 0 {
			gen, member = -1, ""
		}
		var cs []offsets.Committed
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				c := offsets.Committed{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset}
				if rp.Metadata != nil {
					c.Metadata = *rp.Metadata
				}
				cs = append(cs, c)
			}
		}
		code := groupCode(s.core.CommitOffsets(r.ctx, r.c.principal, req.Group, member, gen, cs))
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteRecords moves each partition's log start (its low
// watermark) through the core's DeleteRecords: delete on the topic, on the
// partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere), an offset up to
// the high watermark (-1: the high watermark; above it, or below -1,
// OFFSET_OUT_OF_RANGE). The answer is the log start now in force.
func handleDeleteRecords(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, req.TimeoutMillis)
		defer cancel()
		for _, rt := range req.Topics {
			t := kmsg.NewDeleteRecordsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDeleteRecordsResponseTopicPartition()
				p.Partition, p.LowWatermark = rp.Partition, -1
				if rp.Offset < -1 {
					p.ErrorCode = kerr.OffsetOutOfRange.Code
				} else if start, err := s.core.DeleteRecords(ctx, r.c.principal, rt.Topic, rp.Partition, rp.Offset); err != nil {
					p.ErrorCode = r.topicCode(err)
				} else {
					p.LowWatermark = start
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

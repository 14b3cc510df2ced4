package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListOffsets answers each partition's earliest (-2), latest (-1, the
// high watermark) or first offset at or after a timestamp (ms), through the
// core's ListOffset (latest under read_committed: the last stable
// offset). The leader epoch is not reported (-1), so clients do
// not validate it with OffsetForLeaderEpoch. The virtual offsets topic
// answers 0 (offsets_topic.go).
func handleListOffsets(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	return func() kmsg.Response {
		for _, rt := range req.Topics {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition = rp.Partition
				off, ts, err := s.core.ListOffset(r.ctx, r.c.principal, rt.Topic, rp.Partition, rp.Timestamp)
				if req.IsolationLevel == 1 && rp.Timestamp == Latest {
					off, ts = -1, -1
					off, err = s.listStable(r, rt.Topic, rp.Partition)
				}
				if s.offsetsTopicIn(rt.Topic, err) {
					ts = -1
					off, err = offsetsTopicOffset(rp.Partition, rp.Timestamp)
				}
				if err != nil {
					p.ErrorCode = r.topicCode(err)
					p.Offset, p.Timestamp = -1, -1
				} else {
					p.Offset, p.Timestamp = off, ts
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}

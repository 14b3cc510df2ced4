package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// shareAlterOffsetsCore is what AlterShareGroupOffsets needs of the core.
type shareAlterOffsetsCore interface {
	AlterShareGroupOffsets(ctx context.Context, p Principal, group string, offs []broker.ShareOffset) ([]broker.ShareOffset, error)
	TopicIDOf(name string) ([16]byte, bool)
}

var _ shareAlterOffsetsCore = (*broker.Broker)(nil)

// handleAlterShareGroupOffsets sets a share group's share-partition start
// offsets (KIP-932): a group with members is NON_EMPTY_GROUP; an offset
// above the high watermark OFFSET_OUT_OF_RANGE.
func handleAlterShareGroupOffsets(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareAlterOffsetsCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		var offs []broker.ShareOffset
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				offs = append(offs, broker.ShareOffset{SharePartition: broker.SharePartition{Topic: t.Topic, Partition: p.Partition}, Start: p.StartOffset})
			}
		}
		done, err := sc.AlterShareGroupOffsets(r.ctx, r.c.principal, req.GroupID, offs)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.shareErr(0, "", err)
			return resp
		}
		index := map[string]int{}
		for _, o := range done {
			i, seen := index[o.Topic]
			if !seen {
				t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
				t.Topic = o.Topic
				t.TopicID, _ = sc.TopicIDOf(o.Topic)
				i = len(resp.Topics)
				index[o.Topic] = i
				resp.Topics = append(resp.Topics, t)
			}
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = o.Partition
			if o.Err != nil {
				p.ErrorCode, p.ErrorMessage = r.sharePartitionErr(0, o.Err)
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
		}
		return resp
	}
}

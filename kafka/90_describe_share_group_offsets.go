package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// shareOffsetsCore is what DescribeShareGroupOffsets needs of the core.
type shareOffsetsCore interface {
	DescribeShareGroupOffsets(ctx context.Context, p Principal, group string, parts []broker.SharePartition) ([]broker.ShareOffset, error)
	TopicIDOf(name string) ([16]byte, bool)
}

var _ shareOffsetsCore = (*broker.Broker)(nil)

// handleDescribeShareGroupOffsets answers each share group's share-partition
// start offsets (KIP-932; null topics: every partition of the topics the
// group reads). A partition the group never used answers -1; Lag is -1
// (not computed).
func handleDescribeShareGroupOffsets(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareOffsetsCore)
		for _, rg := range req.Groups {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID = rg.GroupID
			if !ok {
				g.ErrorCode = kerr.UnsupportedVersion.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			var parts []broker.SharePartition
			if rg.Topics != nil {
				parts = []broker.SharePartition{}
				for _, t := range rg.Topics {
					for _, p := range t.Partitions {
						parts = append(parts, broker.SharePartition{Topic: t.Topic, Partition: p})
					}
				}
			}
			offs, err := sc.DescribeShareGroupOffsets(r.ctx, r.c.principal, rg.GroupID, parts)
			if err != nil {
				g.ErrorCode, g.ErrorMessage = r.shareErr(0, "", err)
				resp.Groups = append(resp.Groups, g)
				continue
			}
			g.Topics = shareOffsetTopics(r, sc, offs)
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

// shareOffsetTopics groups the offsets by topic, in their order.
func shareOffsetTopics(r *request, sc shareOffsetsCore, offs []broker.ShareOffset) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	index := map[string]int{}
	for _, o := range offs {
		i, seen := index[o.Topic]
		if !seen {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic = o.Topic
			t.TopicID, _ = sc.TopicIDOf(o.Topic)
			i = len(out)
			index[o.Topic] = i
			out = append(out, t)
		}
		p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		p.Partition, p.StartOffset, p.LeaderEpoch = o.Partition, o.Start, -1
		if o.Err != nil {
			p.StartOffset = -1
			p.ErrorCode, p.ErrorMessage = r.sharePartitionErr(0, o.Err)
		}
		out[i].Partitions = append(out[i].Partitions, p)
	}
	return out
}

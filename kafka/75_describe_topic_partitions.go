package kafka

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultPartitionLimit is Kafka's max.request.partition.size.limit, the
// bound on the partitions one DescribeTopicPartitions answer holds.
const defaultPartitionLimit = 2000

// handleDescribeTopicPartitions answers as Metadata does for the same
// topics (every topic the principal may describe when none is named; an
// unknown or refused topic gets Metadata's code), in name order, from the
// cursor on, and at most ResponsePartitionLimit partitions: the rest is
// named by NextCursor. logd has no eligible leader replicas (ELR) and
// no offline replicas to report.
func handleDescribeTopicPartitions(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	return func() kmsg.Response {
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Version = 12
		if len(req.Topics) > 0 {
			mreq.Topics = []kmsg.MetadataRequestTopic{}
			for _, rt := range req.Topics {
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(rt.Topic)
				mreq.Topics = append(mreq.Topics, t)
			}
		}
		meta := mreq.ResponseKind().(*kmsg.MetadataResponse)
		s.metadata(r, mreq, meta)
		sort.Slice(meta.Topics, func(i, j int) bool { return *meta.Topics[i].Topic < *meta.Topics[j].Topic })
		limit := req.ResponsePartitionLimit
		if limit <= 0 || limit > defaultPartitionLimit {
			limit = defaultPartitionLimit
		}
		pageTopics(resp, meta.Topics, req.Cursor, limit)
		return resp
	}
}

// pageTopics fills resp with the topics from cursor on, at most limit
// partitions, and the cursor of the rest.
func pageTopics(resp *kmsg.DescribeTopicPartitionsResponse, topics []kmsg.MetadataResponseTopic, cursor *kmsg.DescribeTopicPartitionsRequestCursor, limit int32) {
	var n int32
	for _, mt := range topics {
		from := int32(0)
		if cursor != nil {
			if *mt.Topic < cursor.Topic {
				continue
			}
			if *mt.Topic == cursor.Topic {
				from = cursor.Partition
			}
		}
		t := kmsg.NewDescribeTopicPartitionsResponseTopic()
		t.ErrorCode, t.Topic, t.IsInternal = mt.ErrorCode, mt.Topic, mt.IsInternal
		t.AuthorizedOperations = -2147483648 // not computed
		for _, mp := range mt.Partitions {
			if mp.Partition < from {
				continue
			}
			if n == limit {
				next := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				next.Topic, next.Partition = *mt.Topic, mp.Partition
				resp.NextCursor = &next
				resp.Topics = append(resp.Topics, t)
				return
			}
			p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			p.ErrorCode, p.Partition, p.LeaderID, p.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			p.Replicas, p.ISR = mp.Replicas, mp.ISR
			p.EligibleLeaderReplicas, p.LastKnownELR, p.OfflineReplicas = []int32{}, []int32{}, []int32{}
			t.Partitions = append(t.Partitions, p)
			n++
		}
		resp.Topics = append(resp.Topics, t)
	}
}

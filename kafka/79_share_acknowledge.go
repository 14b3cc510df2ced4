package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// handleShareAcknowledge applies a member's acknowledgements, each
// partition's durable before the answer; epoch -1 closes its session.
func handleShareAcknowledge(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	return func() kmsg.Response {
		sc, ok := s.core.(shareCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		parts := &shareParts{sc: sc, ids: map[string][16]byte{}}
		br := broker.ShareFetchRequest{Principal: r.c.principal, Group: derefString(req.GroupID), Member: derefString(req.MemberID),
			SessionEpoch: req.ShareSessionEpoch}
		topic := shareAckTopics(resp)
		for _, t := range req.Topics {
			name, ok := parts.resolve(t.TopicID)
			for _, p := range t.Partitions {
				if !ok {
					rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
					tt := topic(t.TopicID)
					tt.Partitions = append(tt.Partitions, rp)
					continue
				}
				br.Partitions = append(br.Partitions, broker.ShareFetchPartition{
					SharePartition: broker.SharePartition{Topic: name, Partition: p.Partition},
					Acks: shareAcks(p.AcknowledgementBatches, func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
						return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
					}),
				})
			}
		}
		res, err := sc.ShareAcknowledge(r.ctx, br)
		resp.ErrorCode, resp.ErrorMessage = r.shareErr(res.Code, res.Message, err)
		if resp.ErrorCode != 0 {
			resp.Topics = nil
			return resp
		}
		resp.AcquisitionLockTimeoutMillis = int32(res.LockMs)
		for _, p := range res.Partitions {
			id, ok := parts.id(p.Topic)
			if !ok {
				continue
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rp.ErrorCode, rp.ErrorMessage = r.sharePartitionErr(p.AckCode, p.AckErr)
			tt := topic(id)
			tt.Partitions = append(tt.Partitions, rp)
		}
		return resp
	}
}

// shareAckTopics returns the response's topic of an id, added on first use.
func shareAckTopics(resp *kmsg.ShareAcknowledgeResponse) func(id [16]byte) *kmsg.ShareAcknowledgeResponseTopic {
	byID := map[[16]byte]int{}
	return func(id [16]byte) *kmsg.ShareAcknowledgeResponseTopic {
		i, ok := byID[id]
		if !ok {
			i = len(resp.Topics)
			byID[id] = i
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
		}
		return &resp.Topics[i]
	}
}

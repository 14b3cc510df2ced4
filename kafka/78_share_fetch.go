package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// shareParts names the topics of a share request by id and back: the
// request names them by id, the core by name, and the answer by id again
// (a partition of the session the request did not name included).
type shareParts struct {
	sc  shareCore
	ids map[string][16]byte
}

func (p *shareParts) resolve(id [16]byte) (string, bool) {
	name, ok := p.sc.TopicByID(id)
	if ok {
		p.ids[name] = id
	}
	return name, ok
}

func (p *shareParts) id(name string) ([16]byte, bool) {
	if id, ok := p.ids[name]; ok {
		return id, true
	}
	id, ok := p.sc.TopicIDOf(name)
	if ok {
		p.ids[name] = id
	}
	return id, ok
}

// handleShareFetch applies a member's acknowledgements and hands it
// records acquired for it (docs/share-groups.md).
func handleShareFetch(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	// As a fetch: the connection's answers not yet written are bounded
	// (fetchbudget.go), and the node's read budget is returned once the
	// answer holds the batches.
	held := shareFetchEstimate(req)
	budget := r.c.fetches
	if err := budget.reserve(r.ctx, held); err != nil {
		return func() kmsg.Response { return nil }
	}
	r.afterWrite = func() { budget.adjust(-held) }
	return func() kmsg.Response {
		sc, ok := s.core.(shareCore)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		parts := &shareParts{sc: sc, ids: map[string][16]byte{}}
		r.c.shared.Store(true)
		br := broker.ShareFetchRequest{Principal: r.c.principal, Group: derefString(req.GroupID), Member: derefString(req.MemberID),
			SessionEpoch: req.ShareSessionEpoch, Conn: r.c.id, MaxWait: time.Duration(req.MaxWaitMillis) * time.Millisecond,
			MaxBytes: int(req.MaxBytes), MaxRecords: int(req.MaxRecords)}
		unknown := map[[16]byte][]kmsg.ShareFetchResponseTopicPartition{}
		for _, t := range req.Topics {
			name, ok := parts.resolve(t.TopicID)
			for _, p := range t.Partitions {
				if !ok {
					rp := kmsg.NewShareFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
					if len(p.AcknowledgementBatches) > 0 {
						rp.AcknowledgeErrorCode = kerr.UnknownTopicID.Code
					}
					unknown[t.TopicID] = append(unknown[t.TopicID], rp)
					continue
				}
				br.Partitions = append(br.Partitions, broker.ShareFetchPartition{
					SharePartition: broker.SharePartition{Topic: name, Partition: p.Partition}, MaxBytes: int(p.PartitionMaxBytes),
					Acks: shareAcks(p.AcknowledgementBatches, func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
						return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
					}),
				})
			}
		}
		for _, t := range req.ForgottenTopicsData {
			if name, ok := parts.resolve(t.TopicID); ok {
				for _, p := range t.Partitions {
					br.Forgotten = append(br.Forgotten, broker.SharePartition{Topic: name, Partition: p})
				}
			}
		}
		res, err := sc.ShareFetch(r.ctx, br)
		size := shareFetchedBytes(res)
		budget.adjust(size - held)
		held = size
		if res.Release != nil {
			res.Release()
		}
		resp.ErrorCode, resp.ErrorMessage = r.shareErr(res.Code, res.Message, err)
		if resp.ErrorCode != 0 {
			return resp
		}
		resp.AcquisitionLockTimeoutMillis = int32(res.LockMs)
		shareFetchTopics(r, resp, parts, res, unknown)
		return resp
	}
}

func shareFetchTopics(r *request, resp *kmsg.ShareFetchResponse, parts *shareParts, res broker.ShareFetchResult, unknown map[[16]byte][]kmsg.ShareFetchResponseTopicPartition) {
	byID := map[[16]byte]int{}
	topic := func(id [16]byte) *kmsg.ShareFetchResponseTopic {
		i, ok := byID[id]
		if !ok {
			i = len(resp.Topics)
			byID[id] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
		}
		return &resp.Topics[i]
	}
	for id, ps := range unknown {
		t := topic(id)
		t.Partitions = append(t.Partitions, ps...)
	}
	for _, p := range res.Partitions {
		id, ok := parts.id(p.Topic)
		if !ok {
			continue
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = p.Partition
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		if p.Acked {
			rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = r.sharePartitionErr(p.AckCode, p.AckErr)
		}
		rp.ErrorCode, rp.ErrorMessage = r.sharePartitionErr(0, p.Err)
		rp.Records = p.Batches
		for _, a := range p.Acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		t := topic(id)
		t.Partitions = append(t.Partitions, rp)
	}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shareFetchEstimate is the most a share fetch may read: its MaxBytes,
// within broker.MaxFetchBytes.
func shareFetchEstimate(req *kmsg.ShareFetchRequest) int64 {
	if req.MaxBytes <= 0 || req.MaxBytes > broker.MaxFetchBytes {
		return broker.MaxFetchBytes
	}
	return int64(req.MaxBytes)
}

// shareFetchedBytes is the memory a share fetch's answer holds.
func shareFetchedBytes(res broker.ShareFetchResult) int64 {
	var n int64
	for _, p := range res.Partitions {
		n += int64(cap(p.Batches))
	}
	return n
}

package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	pb "github.com/logd/logd/proto/logd/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The gRPC Share service: share groups (docs/queues.md) for native
// clients, over the broker's share API, which authorizes each call (READ
// on the group, READ on each topic) as it does Kafka's.

// shareServer serves the Share service.
type shareServer struct {
	pb.UnimplementedShareServer
	s *Server
}

// defaultShareRecords is a fetch's max_records when it names none.
const defaultShareRecords = 500

// maxShareWait bounds a fetch's wait as the broker does a fetch's.
const maxShareWait = broker.MaxWait

// Fetch applies the request's acknowledgements, then acquires records.
func (h *shareServer) Fetch(ctx context.Context, req *pb.ShareFetchRequest) (*pb.ShareFetchResponse, error) {
	r, err := shareRequest(ctx, req.Group, req.MemberId, req.SessionEpoch, req.Acks)
	if err != nil {
		return nil, err
	}
	if req.MaxRecords < 0 || req.MaxWaitMs < 0 || req.MaxBytes < 0 {
		return nil, status.Error(codes.InvalidArgument, "max_records, max_wait_ms and max_bytes are 0 (the default) or more")
	}
	r.MaxRecords = int(req.MaxRecords)
	if r.MaxRecords == 0 {
		r.MaxRecords = defaultShareRecords
	}
	r.MaxWait = min(time.Duration(req.MaxWaitMs)*time.Millisecond, maxShareWait)
	r.MaxBytes = int(req.MaxBytes)
	for _, p := range req.Partitions {
		if p.Topic == "" || p.Partition < 0 {
			return nil, status.Error(codes.InvalidArgument, "a share fetch partition names a topic and a partition (0 or more)")
		}
		ref := broker.SharePartition{Topic: p.Topic, Partition: p.Partition}
		if !hasSharePartition(r.Partitions, ref) {
			r.Partitions = append(r.Partitions, broker.ShareFetchPartition{SharePartition: ref})
		}
	}
	res, err := h.s.b.ShareFetch(ctx, r)
	if err != nil {
		return nil, err
	}
	// The batches count against the read budget until the handler
	// returns (gRPC encodes the answer right after).
	if res.Release != nil {
		defer res.Release()
	}
	out := &pb.ShareFetchResponse{Status: pb.ShareStatus(res.Code), Message: res.Message}
	if res.Code != broker.ShareOK {
		return out, nil
	}
	out.LockDeadlineMs = time.Now().UnixMilli() + res.LockMs
	if out.Acks, err = shareAckResults(res); err != nil {
		return nil, err
	}
	for _, p := range res.Partitions {
		if p.Err != nil {
			return nil, p.Err
		}
		if err := shareRecords(out, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Acknowledge applies acknowledgements alone.
func (h *shareServer) Acknowledge(ctx context.Context, req *pb.ShareAcknowledgeRequest) (*pb.ShareAcknowledgeResponse, error) {
	r, err := shareRequest(ctx, req.Group, req.MemberId, req.SessionEpoch, req.Acks)
	if err != nil {
		return nil, err
	}
	res, err := h.s.b.ShareAcknowledge(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &pb.ShareAcknowledgeResponse{Status: pb.ShareStatus(res.Code), Message: res.Message}
	if res.Code != broker.ShareOK {
		return out, nil
	}
	if out.Acks, err = shareAckResults(res); err != nil {
		return nil, err
	}
	return out, nil
}

// shareRequest checks a request's common fields and groups its
// acknowledgements by partition.
func shareRequest(ctx context.Context, group, member string, epoch int32, acks []*pb.ShareAck) (broker.ShareFetchRequest, error) {
	r := broker.ShareFetchRequest{Principal: principal(ctx), Group: group, Member: member, SessionEpoch: epoch}
	if group == "" || member == "" {
		return r, status.Error(codes.InvalidArgument, "a share call names its group and member_id")
	}
	if epoch < -1 {
		return r, status.Error(codes.InvalidArgument, "session_epoch is 0 (open), -1 (close) or the session's next epoch")
	}
	grouped, err := groupShareAcks(acks)
	if err != nil {
		return r, err
	}
	r.Partitions = grouped
	return r, nil
}

// groupShareAcks turns per-record acknowledgements into one
// acknowledgement list per partition.
func groupShareAcks(acks []*pb.ShareAck) ([]broker.ShareFetchPartition, error) {
	var parts []broker.ShareFetchPartition
	index := map[broker.SharePartition]int{}
	for _, a := range acks {
		if a.Topic == "" || a.Partition < 0 || a.Offset < 0 {
			return nil, status.Error(codes.InvalidArgument, "an acknowledgement names a topic, a partition and an offset (0 or more)")
		}
		if a.Type < pb.ShareAckType_SHARE_ACK_GAP || a.Type > pb.ShareAckType_SHARE_ACK_REJECT {
			return nil, status.Errorf(codes.InvalidArgument, "acknowledgement type %d: use accept, release, reject or gap", a.Type)
		}
		if a.Reason != "" && a.Type != pb.ShareAckType_SHARE_ACK_REJECT {
			return nil, status.Errorf(codes.InvalidArgument, "%s-%d@%d: a reason goes with a reject only, not with %s",
				a.Topic, a.Partition, a.Offset, a.Type)
		}
		ref := broker.SharePartition{Topic: a.Topic, Partition: a.Partition}
		i, ok := index[ref]
		if !ok {
			i = len(parts)
			index[ref] = i
			parts = append(parts, broker.ShareFetchPartition{SharePartition: ref})
		}
		parts[i].Acks = append(parts[i].Acks, broker.ShareAck{First: a.Offset, Last: a.Offset,
			Types: []broker.ShareAckType{broker.ShareAckType(a.Type)}})
		if a.Reason != "" {
			if parts[i].Reasons == nil {
				parts[i].Reasons = map[int64]string{}
			}
			parts[i].Reasons[a.Offset] = a.Reason
		}
	}
	return parts, nil
}

func hasSharePartition(parts []broker.ShareFetchPartition, ref broker.SharePartition) bool {
	for _, p := range parts {
		if p.SharePartition == ref {
			return true
		}
	}
	return false
}

// shareAckResults is the outcome of each partition's acknowledgements; an
// error of the core (an unknown topic, a refused one) fails the call.
func shareAckResults(res broker.ShareFetchResult) ([]*pb.ShareAckResult, error) {
	var out []*pb.ShareAckResult
	for _, p := range res.Partitions {
		if !p.Acked {
			continue
		}
		if p.AckCode == broker.ShareOK && p.AckErr != nil {
			return nil, p.AckErr
		}
		r := &pb.ShareAckResult{Topic: p.Topic, Partition: p.Partition, Status: pb.ShareStatus(p.AckCode)}
		switch p.AckCode {
		case broker.ShareInvalidRecordState:
			r.Message = "an acknowledged record is not held by this member (its lock expired or it was acknowledged): fetch again"
		case broker.ShareOK:
		default:
			r.Message = fmt.Sprint(p.AckErr)
		}
		out = append(out, r)
	}
	return out, nil
}

// shareRecords adds the records of p's acquired ranges to out, and the
// acquired offsets that hold no data record as gaps.
func shareRecords(out *pb.ShareFetchResponse, p broker.ShareFetchedPartition) error {
	if len(p.Acquired) == 0 {
		return nil
	}
	seen := map[int64]bool{}
	err := batch.Split(p.Batches, func(one []byte, info batch.Info) error {
		if info.IsControl() {
			return nil
		}
		_, recs, err := batch.Decode(one, 0)
		if err != nil {
			return corruptBatch(fmt.Sprintf("%s-%d", p.Topic, p.Partition), info, err)
		}
		for _, r := range recs {
			count, ok := acquiredCount(p.Acquired, r.Offset)
			if !ok {
				continue
			}
			seen[r.Offset] = true
			resp := &pb.FetchResponse{}
			appendRecords(resp, []batch.Record{r})
			out.Records = append(out.Records, &pb.ShareRecord{Topic: p.Topic, Partition: p.Partition,
				Record: resp.Records[0], DeliveryCount: int32(count)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopRead) {
		return err
	}
	for _, rg := range p.Acquired {
		for o := rg.First; o <= rg.Last; o++ {
			if !seen[o] {
				out.Gaps = append(out.Gaps, &pb.ShareGap{Topic: p.Topic, Partition: p.Partition, First: o, Last: o})
			}
		}
	}
	return nil
}

// acquiredCount is the delivery count of offset o if it is acquired.
func acquiredCount(rs []broker.ShareRange, o int64) (int16, bool) {
	for _, r := range rs {
		if o >= r.First && o <= r.Last {
			return r.DeliveryCount, true
		}
	}
	return 0, false
}

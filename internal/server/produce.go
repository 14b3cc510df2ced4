package server

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

// Produce appends one batch (or routed records) and answers once durable.
func (s *Server) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	resp, err := s.produce(ctx, req)
	if err != nil {
		err = toStatus(err)
		s.m.produceErrors.WithLabelValues(status.Code(err).String()).Inc()
		return nil, err
	}
	return resp, nil
}

func acksOf(a pb.Acks) broker.Acks {
	if a == pb.Acks_ACKS_LEADER {
		return broker.AcksLeader
	}
	return broker.AcksAll
}

func partitionAppend(id int32, r broker.ProduceResult) *pb.PartitionAppend {
	return &pb.PartitionAppend{Partition: id, BaseOffset: r.BaseOffset, LastOffset: r.LastOffset, Duplicate: r.Duplicate}
}

func (s *Server) produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, err := s.b.PartitionCount(ctx, principal(ctx), req.Topic)
	if err != nil {
		return nil, err
	}
	resp := &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic}
	switch {
	case len(req.Batch) > 0 && len(req.Records) > 0:
		return nil, invalidArg("produce: set either batch or records, not both")
	case len(req.Batch) > 0:
		if req.Partition == nil {
			return nil, invalidArg("produce: a batch needs its partition: set partition (0 to %d)", n-1)
		}
		res, err := s.b.Produce(ctx, broker.ProduceRequest{Principal: principal(ctx), Topic: req.Topic, Partition: *req.Partition, Batch: req.Batch, Acks: acksOf(req.Acks)})
		if err != nil {
			return nil, err
		}
		resp.Appends = append(resp.Appends, partitionAppend(*req.Partition, res))
	case len(req.Records) > 0:
		batches, err := s.recordBatches(req, n)
		if err != nil {
			return nil, err
		}
		for id := range n {
			b, ok := batches[id]
			if !ok {
				continue
			}
			res, err := s.b.Produce(ctx, broker.ProduceRequest{Principal: principal(ctx), Topic: req.Topic, Partition: id, Batch: b, Acks: acksOf(req.Acks)})
			if err != nil {
				return nil, err
			}
			resp.Appends = append(resp.Appends, partitionAppend(id, res))
		}
	default:
		return nil, invalidArg("produce: empty request: send a batch or at least one record")
	}
	return resp, nil
}

// recordBatches routes plain records to partitions and encodes a batch
// for each. Every batch is encoded and checked before any is appended, so
// a rejected request stores nothing (a retry must not duplicate).
func (s *Server) recordBatches(req *pb.ProduceRequest, n int32) (map[int32][]byte, error) {
	byPart, err := s.routeRecords(req, n)
	if err != nil {
		return nil, err
	}
	batches := make(map[int32][]byte, len(byPart))
	for id, recs := range byPart {
		b := batch.Encode(nil, 0, batch.NoProducer, recs)
		if len(b) > s.b.MaxBatchBytes() {
			return nil, tooLarge("produce: the records for partition %d encode to %d bytes, over the %d-byte batch limit: send fewer or smaller records", id, len(b), s.b.MaxBatchBytes())
		}
		batches[id] = b
	}
	return batches, nil
}

var roundRobin atomic.Uint32

// recordOverhead is the least a record costs in a batch besides its key,
// value and headers: length, attributes, timestamp and offset deltas, key
// and value lengths, header count (varints of one byte each at least).
const recordOverhead = 7

// routeRecords assigns plain records to partitions: the request's partition,
// else murmur2 of the key, else round-robin.
func (s *Server) routeRecords(req *pb.ProduceRequest, n int32) (map[int32][]batch.Record, error) {
	if req.Partition != nil && (*req.Partition < 0 || *req.Partition >= n) {
		return nil, kind.Errorf(broker.ErrUnknownPartition, "topic %q has partitions 0 to %d, not %d", req.Topic, n-1, *req.Partition)
	}
	now := time.Now().UnixMilli()
	out := make(map[int32][]batch.Record)
	total := 0
	// Count each record's framing too (recordOverhead bounds it from
	// below), so a flood of tiny records is refused before it is converted.
	for _, r := range req.Records {
		total += recordOverhead + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			total += len(h.Key) + len(h.Value)
		}
	}
	if total > s.b.MaxBatchBytes() {
		return nil, tooLarge("produce: %d records of about %d bytes in all are over the %d-byte limit: send fewer or smaller records", len(req.Records), total, s.b.MaxBatchBytes())
	}
	// Unkeyed records of one request stick to one partition (one batch).
	sticky := int32(roundRobin.Add(1) % uint32(n))
	for _, r := range req.Records {
		var pid int32
		switch {
		case req.Partition != nil:
			pid = *req.Partition
		case len(r.Key) > 0:
			pid = routing.ForKey(r.Key, int(n))
		default:
			pid = sticky
		}
		ts := r.TimestampMs
		if ts == 0 {
			ts = now
		}
		rec := batch.Record{Timestamp: ts, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, batch.Header{Key: h.Key, Value: h.Value})
		}
		out[pid] = append(out[pid], rec)
	}
	return out, nil
}

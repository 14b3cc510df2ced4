package server

import (
	"context"

	"google.golang.org/grpc/status"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	pb "github.com/logd/logd/proto/logd/v1"
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
	// The topic and the principal's right to describe it are checked
	// before the request's shape.
	n, err := s.b.PartitionCount(ctx, principal(ctx), req.Topic)
	if err != nil {
		return nil, err
	}
	switch {
	case len(req.Batch) > 0 && len(req.Records) > 0:
		return nil, invalidArg("produce: set either batch or records, not both")
	case len(req.Records) > 0:
		return s.produceRecords(ctx, req, n)
	case len(req.Batch) == 0:
		return nil, invalidArg("produce: empty request: send a batch or at least one record")
	case req.Partition == nil:
		return nil, invalidArg("produce: a batch needs its partition: set partition (0 to %d)", n-1)
	}
	if req.TransactionalId != "" {
		if err := s.b.Authorize(ctx, principal(ctx), auth.OpWrite, auth.TransactionalID(req.TransactionalId)); err != nil {
			return nil, err
		}
	}
	res, err := s.b.Produce(ctx, broker.ProduceRequest{Principal: principal(ctx), Topic: req.Topic, Partition: *req.Partition, Batch: req.Batch, Acks: acksOf(req.Acks),
		TransactionalID: req.TransactionalId})
	if err != nil {
		return nil, err
	}
	return &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic,
		Appends: []*pb.PartitionAppend{partitionAppend(*req.Partition, res)}}, nil
}

// produceRecords has the broker route, encode and append plain records
// (broker.ProduceRecords). The answer is the first failed partition's
// error, else every partition's append in partition order.
func (s *Server) produceRecords(ctx context.Context, req *pb.ProduceRequest, n int32) (*pb.ProduceResponse, error) {
	recs, err := s.toRecords(req, n)
	if err != nil {
		return nil, err
	}
	writes, err := s.b.ProduceRecords(ctx, broker.RecordsRequest{Principal: principal(ctx), Topic: req.Topic,
		Records: recs, Acks: acksOf(req.Acks), ProducerID: -1})
	if err != nil {
		return nil, err
	}
	resp := &pb.ProduceResponse{RequestId: req.RequestId, Topic: req.Topic, Appends: make([]*pb.PartitionAppend, 0, len(writes))}
	for _, w := range writes {
		if w.Err != nil {
			return nil, w.Err
		}
		resp.Appends = append(resp.Appends, partitionAppend(w.Partition, w.Result))
	}
	return resp, nil
}

// recordOverhead is the least a record costs in a batch besides its key,
// value and headers: length, attributes, timestamp and offset deltas, key
// and value lengths, header count (varints of one byte each at least).
const recordOverhead = 7

// toRecords converts the request's plain records for the broker, all to
// the request's partition when it names one. It counts each record's
// framing too (recordOverhead bounds it from below), so a flood of tiny
// records is refused before it is converted.
func (s *Server) toRecords(req *pb.ProduceRequest, n int32) ([]broker.Record, error) {
	part := broker.AnyPartition
	if req.Partition != nil {
		if *req.Partition < 0 || *req.Partition >= n {
			return nil, kind.Errorf(broker.ErrUnknownPartition, "topic %q has partitions 0 to %d, not %d", req.Topic, n-1, *req.Partition)
		}
		part = *req.Partition
	}
	total := 0
	for _, r := range req.Records {
		total += recordOverhead + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			total += len(h.Key) + len(h.Value)
		}
	}
	if total > s.b.MaxBatchBytes() {
		return nil, tooLarge("produce: %d records of about %d bytes in all are over the %d-byte limit: send fewer or smaller records", len(req.Records), total, s.b.MaxBatchBytes())
	}
	out := make([]broker.Record, len(req.Records))
	for i, r := range req.Records {
		out[i] = broker.Record{Partition: part, Key: r.Key, Value: r.Value, TimestampMs: r.TimestampMs}
		// An empty key is no key: the record is routed with the unkeyed.
		if len(r.Key) == 0 {
			out[i].Key = nil
		}
		out[i].Headers = each(r.Headers, func(h *pb.Header) batch.Header { return batch.Header{Key: h.Key, Value: h.Value} })
	}
	return out, nil
}

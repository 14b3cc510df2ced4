package server

import (
	"context"
	"time"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Fetch returns committed batches from an offset, long-polling when there
// are none yet.
func (s *Server) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	if req.MaxWaitMs < 0 {
		return nil, invalidArg("fetch: max_wait_ms must be >= 0, got %d", req.MaxWaitMs)
	}
	committed, err := readCommitted(req.Isolation)
	if err != nil {
		return nil, err
	}
	res, err := s.b.Fetch(ctx, broker.FetchRequest{Principal: principal(ctx),
		Partitions: []broker.FetchPartition{{Topic: req.Topic, Partition: req.Partition, Offset: req.Offset, MaxBytes: int(req.MaxBytes)}},
		MinBytes:   1,
		MaxWait:    time.Duration(req.MaxWaitMs) * time.Millisecond,
		Decode:     req.Decode,
		// read_committed as logd's readers see it: without markers and
		// aborted transactions.
		ReadCommitted: committed, DropAborted: committed,
	})
	if err != nil {
		return nil, err
	}
	// The response's memory counts against the read budget until the
	// handler returns (gRPC encodes it right after).
	defer res.Release()
	fp := res.Partitions[0]
	if fp.Err != nil {
		return nil, fp.Err
	}
	return fetchResponse(fp, req.Offset, req.Decode)
}

// ListOffsets resolves earliest, latest (under read_committed, the
// default, the last stable offset) or a time to offsets.
func (s *Server) ListOffsets(ctx context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	var spec int64
	switch req.Spec {
	case pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
		spec = broker.Earliest
	case pb.OffsetSpec_OFFSET_SPEC_LATEST:
		spec = broker.Latest
	case pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
		spec = max(req.TimestampMs, 0)
	default:
		return nil, invalidArg("list offsets: unknown spec %v", req.Spec)
	}
	committed, err := readCommitted(req.Isolation)
	if err != nil {
		return nil, err
	}
	pos, err := s.b.ListOffsetsIsolated(ctx, principal(ctx), req.Topic, req.Partitions, spec, committed)
	if err != nil {
		return nil, err
	}
	return &pb.ListOffsetsResponse{Topic: req.Topic, Partitions: each(pos, func(po broker.PartitionOffset) *pb.PartitionOffset {
		return &pb.PartitionOffset{Partition: po.Partition, Offset: po.Offset, LogStartOffset: po.LogStart, HighWatermark: po.HighWatermark}
	})}, nil
}

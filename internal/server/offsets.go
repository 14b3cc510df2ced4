package server

import (
	"context"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/offsets"
	pb "github.com/logd/logd/proto/logd/v1"
)

// CommitOffsets stores a group's offsets atomically and durably (the
// broker checks them; in a cluster a node that does not lead the metadata
// forwards the request to the one that does).
func (s *Server) CommitOffsets(ctx context.Context, req *pb.CommitOffsetsRequest) (*pb.CommitOffsetsResponse, error) {
	cs := each(req.Offsets, func(o *pb.CommittedOffset) offsets.Committed {
		return offsets.Committed{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	})
	gen := int32(-1) // from outside the group (manual assignment, a reset)
	if req.Generation != nil {
		gen = *req.Generation
	}
	return reply(&pb.CommitOffsetsResponse{}, s.b.Forward().CommitOffsets(ctx, principal(ctx), req.Group, req.MemberId, gen, cs))
}

// FetchOffsets returns a group's committed offsets with each partition's
// bounds and the group's lag. In a cluster the offsets are read on the
// metadata leader, current, and the bounds from each partition's leader
// by the node asked first.
func (s *Server) FetchOffsets(ctx context.Context, req *pb.FetchOffsetsRequest) (*pb.FetchOffsetsResponse, error) {
	var topics []string
	if req.Topic != "" {
		topics = []string{req.Topic}
	}
	cs, err := s.b.Forward().FetchOffsets(ctx, principal(ctx), req.Group, topics)
	if err != nil {
		return nil, err
	}
	return &pb.FetchOffsetsResponse{Group: req.Group, Offsets: each(s.b.Lag(ctx, req.Group, cs), func(g broker.GroupOffset) *pb.CommittedOffset {
		c := g.Committed
		co := &pb.CommittedOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset,
			Metadata: c.Metadata, CommitTimeMs: c.CommitTime.UnixMilli()}
		if g.Known {
			co.LogStartOffset, co.HighWatermark, co.Lag, co.Trimmed = g.LogStart, g.HighWatermark, g.Lag, g.Trimmed
		}
		return co
	})}, nil
}

// ListGroups lists groups that have committed offsets.
func (s *Server) ListGroups(ctx context.Context, req *pb.ListGroupsRequest) (*pb.ListGroupsResponse, error) {
	gs, err := s.b.Forward().ListGroups(ctx, principal(ctx))
	return reply(&pb.ListGroupsResponse{Groups: gs}, err)
}

// DeleteGroup deletes a group and its committed offsets (on the metadata
// leader, in a cluster).
func (s *Server) DeleteGroup(ctx context.Context, req *pb.DeleteGroupRequest) (*pb.DeleteGroupResponse, error) {
	return reply(&pb.DeleteGroupResponse{}, s.b.Forward().DeleteGroup(ctx, principal(ctx), req.GetGroup()))
}

// ResetOffsets moves a group's offsets in one topic to earliest, latest, a
// time or an explicit offset (clamped to the log's bounds, as Kafka does).
func (s *Server) ResetOffsets(ctx context.Context, req *pb.ResetOffsetsRequest) (*pb.ResetOffsetsResponse, error) {
	var spec offsets.ResetSpec
	switch {
	case req.Offset != nil:
		spec = offsets.ResetSpec{Kind: offsets.ResetOffset, Offset: *req.Offset}
	case req.Spec == pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
		spec = offsets.ResetSpec{Kind: offsets.ResetEarliest}
	case req.Spec == pb.OffsetSpec_OFFSET_SPEC_LATEST:
		spec = offsets.ResetSpec{Kind: offsets.ResetLatest}
	case req.Spec == pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
		spec = offsets.ResetSpec{Kind: offsets.ResetTime, Time: time.UnixMilli(req.TimestampMs)}
	default:
		return nil, invalidArg("reset offsets: unknown spec %v", req.Spec)
	}
	cs, err := s.b.ResetOffsets(ctx, principal(ctx), req.Group, req.Topic, req.Partition, spec)
	if err != nil {
		return nil, err
	}
	return &pb.ResetOffsetsResponse{Offsets: each(cs, func(c offsets.Committed) *pb.CommittedOffset {
		return &pb.CommittedOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset}
	})}, nil
}

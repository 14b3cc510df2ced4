package server

import (
	"context"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
)

// CommitOffsets stores a group's offsets atomically and durably. Offsets
// must name existing partitions; an offset beyond the high watermark is
// refused (it would skip records that do not exist yet).
func (s *Server) CommitOffsets(ctx context.Context, req *pb.CommitOffsetsRequest) (*pb.CommitOffsetsResponse, error) {
	if err := s.disk.checkMetadata(); err != nil {
		return nil, err
	}
	if len(req.Offsets) == 0 {
		return nil, invalidArg("commit offsets: no offsets given")
	}
	cs := make([]offsets.Committed, 0, len(req.Offsets))
	for _, o := range req.Offsets {
		p, err := s.topics.Partition(o.Topic, o.Partition)
		if err != nil {
			return nil, s.topicLookup(ctx, o.Topic, err)
		}
		// In a cluster only the leader knows the high watermark for sure (a
		// follower's may lag): others leave the check to it.
		if hw := p.Log.HighWatermark(); o.Offset > hw && (s.cl == nil || s.cl.leads(p)) {
			return nil, invalidArg("commit offsets: offset %d of %s is beyond its high watermark %d", o.Offset, p.Name(), hw)
		}
		cs = append(cs, offsets.Committed{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata})
	}
	if s.cl != nil {
		return metaWrite(s, ctx, pb.Offsets_CommitOffsets_FullMethodName, req, &pb.CommitOffsetsResponse{}, func() (*pb.CommitOffsetsResponse, error) {
			return &pb.CommitOffsetsResponse{}, s.cl.commitOffsets(ctx, req.Group, cs)
		})
	}
	if err := s.offsets.Commit(req.Group, cs); err != nil {
		return nil, toStatus(err)
	}
	return &pb.CommitOffsetsResponse{}, nil
}

// FetchOffsets returns a group's committed offsets with each partition's
// bounds and the group's lag. In a cluster the offsets are read from the
// metadata leader, current (see cluster.linearizable), and the bounds from
// each partition's leader.
func (s *Server) FetchOffsets(ctx context.Context, req *pb.FetchOffsetsRequest) (*pb.FetchOffsetsResponse, error) {
	if req.Topic != "" {
		if _, err := s.topics.Config(req.Topic); err != nil {
			return nil, s.topicLookup(ctx, req.Topic, err)
		}
	}
	var cs []offsets.Committed
	if s.cl != nil && !s.cl.meta.IsLeader() {
		if forwarded(ctx) {
			return nil, unavailableLeader("the cluster metadata", s.cl.metaLeaderAPI())
		}
		lead := s.cl.metaLeaderAPI()
		if lead == "" {
			return nil, unavailableLeader("the cluster metadata", "")
		}
		fresp := &pb.FetchOffsetsResponse{}
		if err := s.cl.fwd.invoke(ctx, lead, pb.Offsets_FetchOffsets_FullMethodName, req, fresp); err != nil {
			return nil, err
		}
		for _, o := range fresp.Offsets {
			cs = append(cs, offsets.Committed{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset,
				Metadata: o.Metadata, CommitTime: time.UnixMilli(o.CommitTimeMs)})
		}
	} else {
		if s.cl != nil {
			if err := s.cl.linearizable(ctx, s.cl.meta, "the cluster metadata"); err != nil {
				return nil, err
			}
		}
		var err error
		if cs, err = s.offsets.Fetch(req.Group, req.Topic); err != nil {
			return nil, toStatus(err)
		}
	}
	resp := &pb.FetchOffsetsResponse{Group: req.Group}
	for _, c := range cs {
		co := &pb.CommittedOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset,
			Metadata: c.Metadata, CommitTimeMs: c.CommitTime.UnixMilli()}
		// A forwarded request's bounds are filled by the node that asked.
		if p, err := s.topics.Partition(c.Topic, c.Partition); err == nil && !forwarded(ctx) {
			var l offsets.PartitionLog = p.Log
			if s.cl != nil {
				if l, err = s.cl.partitionLog(ctx, p); err != nil {
					l = nil // bounds unknown now: report the offset alone
				}
			}
			if l != nil {
				co.LogStartOffset, co.HighWatermark = l.StartOffset(), l.HighWatermark()
				lag := s.lag.Observe(offsets.GroupPosition{Group: req.Group, Topic: c.Topic, Partition: c.Partition,
					Committed: c.Offset, LogStart: co.LogStartOffset, HighWatermark: co.HighWatermark})
				co.Lag, co.Trimmed = lag.Lag, lag.Trimmed
			}
		}
		resp.Offsets = append(resp.Offsets, co)
	}
	return resp, nil
}

// ListGroups lists groups that have committed offsets.
func (s *Server) ListGroups(ctx context.Context, req *pb.ListGroupsRequest) (*pb.ListGroupsResponse, error) {
	if s.cl != nil && !s.cl.meta.IsLeader() && !forwarded(ctx) {
		if lead := s.cl.metaLeaderAPI(); lead != "" {
			resp := &pb.ListGroupsResponse{}
			if err := s.cl.fwd.invoke(ctx, lead, pb.Offsets_ListGroups_FullMethodName, req, resp); err != nil {
				return nil, err
			}
			return resp, nil
		}
	}
	if s.cl != nil {
		if err := s.cl.linearizable(ctx, s.cl.meta, "the cluster metadata"); err != nil {
			return nil, err
		}
	}
	gs, err := s.offsets.Groups()
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListGroupsResponse{Groups: gs}, nil
}

// ResetOffsets moves a group's offsets in one topic to earliest, latest, a
// time or an explicit offset (clamped to the log's bounds, as Kafka does).
func (s *Server) ResetOffsets(ctx context.Context, req *pb.ResetOffsetsRequest) (*pb.ResetOffsetsResponse, error) {
	if err := s.disk.checkMetadata(); err != nil {
		return nil, err
	}
	cfg, parts, err := s.topics.Partitions(req.Topic)
	if err != nil {
		return nil, s.topicLookup(ctx, req.Topic, err)
	}
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
	targets := parts
	if req.Partition != nil {
		if *req.Partition < 0 || *req.Partition >= cfg.Partitions {
			return nil, status.Errorf(codes.NotFound, "topic %q has partitions 0 to %d, not %d", req.Topic, cfg.Partitions-1, *req.Partition)
		}
		targets = []*partition.Partition{parts[*req.Partition]}
	}
	var cs []offsets.Committed
	for _, p := range targets {
		var l offsets.PartitionLog = p.Log
		if s.cl != nil {
			if l, err = s.cl.partitionLog(ctx, p); err != nil {
				return nil, err
			}
		}
		r, err := spec.Resolve(time.Now(), l)
		if err != nil {
			return nil, toStatus(err)
		}
		cs = append(cs, offsets.Committed{Topic: p.Topic, Partition: p.ID, Offset: r.Offset})
	}
	if s.cl != nil {
		if s.cl.meta.IsLeader() {
			err = s.cl.commitOffsets(ctx, req.Group, cs)
		} else {
			// The resolved offsets go to the metadata leader as a commit.
			commit := &pb.CommitOffsetsRequest{Group: req.Group}
			for _, c := range cs {
				commit.Offsets = append(commit.Offsets, &pb.CommittedOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset})
			}
			_, err = metaWrite(s, ctx, pb.Offsets_CommitOffsets_FullMethodName, commit, &pb.CommitOffsetsResponse{}, func() (*pb.CommitOffsetsResponse, error) {
				return &pb.CommitOffsetsResponse{}, s.cl.commitOffsets(ctx, req.Group, cs)
			})
		}
		if err != nil {
			return nil, err
		}
	} else if err := s.offsets.Commit(req.Group, cs); err != nil {
		return nil, toStatus(err)
	}
	resp := &pb.ResetOffsetsResponse{}
	for _, c := range cs {
		resp.Offsets = append(resp.Offsets, &pb.CommittedOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset})
	}
	return resp, nil
}

// groupPositions enumerates every committed offset with its partition's
// bounds, for the lag metrics at scrape time.
func (s *Server) groupPositions() ([]offsets.GroupPosition, error) {
	groups, err := s.offsets.Groups()
	if err != nil {
		return nil, err
	}
	sort.Strings(groups)
	var out []offsets.GroupPosition
	for _, g := range groups {
		cs, err := s.offsets.Fetch(g, "")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			p, err := s.topics.Partition(c.Topic, c.Partition)
			if err != nil {
				continue
			}
			out = append(out, offsets.GroupPosition{Group: g, Topic: c.Topic, Partition: c.Partition,
				Committed: c.Offset, LogStart: p.Log.StartOffset(), HighWatermark: p.Log.HighWatermark()})
		}
	}
	return out, nil
}

package server

import (
	"context"

	pb "github.com/logd/logd/proto/logd/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Describe shows a share group (broker.DescribeShareGroup, which
// authorizes DESCRIBE on the group).
func (h *shareServer) Describe(ctx context.Context, req *pb.ShareDescribeRequest) (*pb.ShareDescribeResponse, error) {
	if req.Group == "" {
		return nil, status.Error(codes.InvalidArgument, "name the share group to describe")
	}
	d, err := h.s.b.DescribeShareGroup(ctx, principal(ctx), req.Group)
	if err != nil {
		return nil, err
	}
	out := &pb.ShareDescribeResponse{Group: d.Group, State: d.State, Epoch: d.Epoch}
	for _, m := range d.Members {
		out.Members = append(out.Members, &pb.ShareMember{MemberId: m.Member, ClientId: m.ClientID, ClientHost: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Topics: m.Topics})
	}
	for _, p := range d.Partitions {
		out.Partitions = append(out.Partitions, &pb.SharePartitionState{Topic: p.Topic, Partition: p.Partition, Start: p.Start, End: p.End,
			InFlight: int32(p.InFlight), Available: int32(p.Available), Acquired: int32(p.Acquired),
			Backlog: p.Backlog, OldestUnackedAgeMs: p.OldestAge.Milliseconds()})
	}
	return out, nil
}

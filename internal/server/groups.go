package server

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The gRPC Groups service: consumer-group membership for logd's own clients,
// on the group coordinator (package groups). A member joins and gets its
// assignment in one call (JoinGroup runs the coordinator's join and sync: the
// coordinator assigns, so the sync never waits), heartbeats with a unary
// call, and leaves with LeaveGroup. Unary calls rather than one member
// stream: the coordinator's session is already timed by heartbeats (a stream
// would add a second liveness signal to reconcile), the same calls map one
// to one onto Kafka's, and a member can reach a new coordinator after a
// failover with the same calls.

// groupsServer serves the Groups service.
type groupsServer struct {
	pb.UnimplementedGroupsServer
	s *Server
}

// JoinGroup joins or re-joins the member and returns its assignment in the
// new generation (broker.JoinAssigned).
func (g *groupsServer) JoinGroup(ctx context.Context, req *pb.JoinGroupRequest) (*pb.JoinGroupResponse, error) {
	r := broker.AssignedJoin{Group: req.Group, MemberID: req.MemberId, ClientID: req.ClientId, Topics: req.Topics,
		Owned: topicPartitionsFromPB(req.Owned), OwnedGeneration: req.OwnedGeneration, Assignors: req.Assignors,
		SessionTimeout:   time.Duration(req.SessionTimeoutMs) * time.Millisecond,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMs) * time.Millisecond}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		r.ClientHost = p.Addr.String()
	}
	a, err := g.s.b.JoinAssigned(ctx, principal(ctx), r)
	if err != nil {
		return nil, err
	}
	return &pb.JoinGroupResponse{MemberId: a.MemberID, Generation: a.Generation, Assignor: a.Assignor,
		Leader: a.Leader, Assignment: topicPartitionsPB(a.Partitions), SessionTimeoutMs: int32(a.SessionTimeout.Milliseconds())}, nil
}

// Heartbeat keeps the member's session alive.
func (g *groupsServer) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	m, err := g.s.b.GroupMember(ctx, principal(ctx), req.Group)
	if err != nil {
		return nil, err
	}
	return reply(&pb.HeartbeatResponse{}, m.Heartbeat(req.MemberId, req.Generation))
}

// LeaveGroup removes the member; the others rebalance at once.
func (g *groupsServer) LeaveGroup(ctx context.Context, req *pb.LeaveGroupRequest) (*pb.LeaveGroupResponse, error) {
	m, err := g.s.b.GroupMember(ctx, principal(ctx), req.Group)
	if err != nil {
		return nil, err
	}
	return reply(&pb.LeaveGroupResponse{}, m.Leave(req.MemberId))
}

// DescribeGroup reports the group's membership.
func (g *groupsServer) DescribeGroup(ctx context.Context, req *pb.DescribeGroupRequest) (*pb.DescribeGroupResponse, error) {
	if req.Group == "" {
		return nil, invalidArg("describe group: the group name is empty")
	}
	d, err := g.s.b.DescribeGroup(ctx, principal(ctx), req.Group)
	if err != nil {
		return nil, err
	}
	resp := &pb.DescribeGroupResponse{Group: d.Group, State: d.State.String(), ProtocolType: d.ProtocolType,
		Assignor: d.Protocol, Generation: d.Generation, Leader: d.Leader, Rebalances: d.Rebalances, Coordinator: g.s.Addr(),
		Members: each(d.Members, func(m groups.MemberDescription) *pb.GroupMember {
			return &pb.GroupMember{MemberId: m.MemberID, ClientId: m.ClientID, ClientHost: m.ClientHost,
				SessionTimeoutMs: int32(m.SessionTimeout.Milliseconds()), Assignment: topicPartitionsPB(m.Partitions)}
		})}
	return resp, nil
}

// ListMemberGroups lists the coordinator's groups with their state, and
// the groups that only have committed offsets as Empty.
func (g *groupsServer) ListMemberGroups(ctx context.Context, req *pb.ListGroupsRequest) (*pb.ListMemberGroupsResponse, error) {
	list, err := g.s.b.ListMemberGroups(ctx, principal(ctx))
	if err != nil {
		return nil, err
	}
	resp := &pb.ListMemberGroupsResponse{Groups: each(list, func(l broker.GroupListing) *pb.GroupListing {
		return &pb.GroupListing{Group: l.Group, State: l.State.String()}
	})}
	slices.SortFunc(resp.Groups, func(a, b *pb.GroupListing) int { return strings.Compare(a.Group, b.Group) })
	return resp, nil
}

func topicPartitionsPB(tps []groups.TopicPartition) []*pb.TopicPartitions {
	var out []*pb.TopicPartitions
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, &pb.TopicPartitions{Topic: tp.Topic})
		}
		last := out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return out
}

func topicPartitionsFromPB(in []*pb.TopicPartitions) []groups.TopicPartition {
	var out []groups.TopicPartition
	for _, t := range in {
		for _, p := range t.Partitions {
			out = append(out, groups.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

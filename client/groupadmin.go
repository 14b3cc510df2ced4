package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// GroupDescription is a consumer group's membership as its coordinator
// reports it.
type GroupDescription struct {
	Group string
	// State is Empty, PreparingRebalance, CompletingRebalance or Stable.
	State       string
	Assignor    string
	Generation  int32
	Leader      string // the leader's member id
	Rebalances  uint64
	Members     []GroupMember // in join order
	Coordinator string        // the API address of the coordinator's node
}

// GroupMember is one member of a group and its partitions.
type GroupMember struct {
	MemberID       string
	ClientID       string
	ClientHost     string
	SessionTimeout time.Duration
	// Assignment: topic -> partitions, ascending.
	Assignment map[string][]int32
}

// DescribeGroup returns a group's state, generation and members. It fails
// with ErrGroupNotFound when no member joined the group since the
// coordinator started (the group may still have committed offsets).
func (a *Admin) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	var resp *logdv1.DescribeGroupResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewGroupsClient(cc).DescribeGroup(ctx, &logdv1.DescribeGroupRequest{Group: group})
		return err
	})
	if err != nil {
		return GroupDescription{}, fmt.Errorf("describe group %q: %w", group, err)
	}
	d := GroupDescription{Group: resp.Group, State: resp.State, Assignor: resp.Assignor, Generation: resp.Generation,
		Leader: resp.Leader, Rebalances: resp.Rebalances, Coordinator: resp.Coordinator}
	for _, m := range resp.Members {
		d.Members = append(d.Members, GroupMember{MemberID: m.MemberId, ClientID: m.ClientId, ClientHost: m.ClientHost,
			SessionTimeout: msDuration(int64(m.SessionTimeoutMs)), Assignment: assignmentMap(m.Assignment)})
	}
	return d, nil
}

// DeleteGroup deletes group and its committed offsets, as Kafka's
// DeleteGroups. A group with members fails with ErrGroupNotEmpty (stop
// them first); a group with no members and no committed offsets with
// ErrGroupNotFound.
func (a *Admin) DeleteGroup(ctx context.Context, group string) error {
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) error {
		_, err := oc.DeleteGroup(ctx, &logdv1.DeleteGroupRequest{Group: group})
		return err
	})
	if err != nil {
		return fmt.Errorf("delete group %q: %w", group, err)
	}
	return nil
}

// CommitMemberOffsets stores offsets for group as its member memberID of
// generation: the coordinator refuses it (ErrIllegalGeneration,
// ErrUnknownMember) when the member missed a rebalance, so a member that was
// replaced cannot overwrite its successor's offsets.
func (a *Admin) CommitMemberOffsets(ctx context.Context, group, memberID string, generation int32, offsets []CommittedOffset) error {
	req := &logdv1.CommitOffsetsRequest{Group: group, MemberId: memberID, Generation: &generation}
	for _, o := range offsets {
		req.Offsets = append(req.Offsets, &logdv1.CommittedOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata})
	}
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) error {
		_, err := oc.CommitOffsets(ctx, req)
		return err
	})
	if err != nil {
		return fmt.Errorf("commit offsets of group %q (member %s, generation %d): %w", group, memberID, generation, err)
	}
	return nil
}

func assignmentMap(in []*logdv1.TopicPartitions) map[string][]int32 {
	out := make(map[string][]int32, len(in))
	for _, t := range in {
		out[t.Topic] = append(out[t.Topic], t.Partitions...)
	}
	return out
}

// GroupListing is one group of ListMemberGroups.
type GroupListing struct {
	Group string
	State string // Empty, PreparingRebalance, CompletingRebalance or Stable
}

// ListMemberGroups lists every consumer group, by name: those with members
// and their state, and those that only have committed offsets (Empty).
func (a *Admin) ListMemberGroups(ctx context.Context) ([]GroupListing, error) {
	var resp *logdv1.ListMemberGroupsResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewGroupsClient(cc).ListMemberGroups(ctx, &logdv1.ListGroupsRequest{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]GroupListing, 0, len(resp.Groups))
	for _, g := range resp.Groups {
		out = append(out, GroupListing{Group: g.Group, State: g.State})
	}
	return out, nil
}

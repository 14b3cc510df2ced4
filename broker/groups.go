package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

// The consumer groups as the front-ends reach them: each call takes the
// principal and is authorized here (docs/security.md: a member's join,
// sync, heartbeat and leave need read on the group, a describe needs
// describe, a listing leaves out what the principal may not describe),
// then runs on the node's group coordinator. Each front-end maps
// auth.ErrDenied to its own answer.

// GroupMember is a principal's access, as a member, to one group's
// coordinator: what GroupMember authorized, for the calls of one request
// (a Kafka LeaveGroup of many members, the gRPC join that joins again
// until it has its assignment). Every call is about the group it was
// made for: a request's Group is set to it.
type GroupMember interface {
	Join(ctx context.Context, req groups.JoinRequest) (groups.JoinResult, error)
	Sync(ctx context.Context, req groups.SyncRequest) (groups.SyncResult, error)
	Heartbeat(member string, generation int32) error
	Leave(member string) error
}

// GroupMember authorizes p to read group and returns its access to the
// group's coordinator, or *NotCoordinatorError naming the metadata leader
// on a node of a cluster that does not coordinate the groups.
func (b *Broker) GroupMember(ctx context.Context, p Principal, group string) (GroupMember, error) {
	if err := b.Authorize(ctx, p, auth.OpRead, auth.Group(group)); err != nil {
		return nil, err
	}
	c, err := b.groupCoordinator()
	if err != nil {
		return nil, err
	}
	return groupMember{c: c, group: group, consumers: &b.consumers}, nil
}

// groupMember is the broker's GroupMember.
type groupMember struct {
	c         *groups.Coordinator
	group     string
	consumers *consumerGroups
}

// What one member brings to a group is bounded: the coordinator holds it
// in memory, and in a cluster records it in the metadata with each
// generation (groups.StateStore). MaxMemberMetadataBytes bounds a join's
// protocols (names and metadata together: a Kafka consumer's subscription
// of some ten thousand topics), MaxMemberAssignmentBytes the assignment a
// leader's SyncGroup gives each member.
const (
	MaxMemberMetadataBytes   = 1 << 20
	MaxMemberAssignmentBytes = 1 << 20
)

func (m groupMember) Join(ctx context.Context, req groups.JoinRequest) (groups.JoinResult, error) {
	req.Group = m.group
	n := 0
	for _, p := range req.Protocols {
		n += len(p.Name) + len(p.Metadata)
	}
	if n > MaxMemberMetadataBytes {
		return groups.JoinResult{}, kind.Errorf(kind.ErrInvalidArgument,
			"group %q: the join's protocols and their metadata have %d bytes, at most %d are allowed", m.group, n, MaxMemberMetadataBytes)
	}
	if k := m.consumers.memberCount(m.group); k > 0 {
		return groups.JoinResult{}, fmt.Errorf("%w: %q is a consumer group (KIP-848's protocol) with %d members, not a classic group",
			groups.ErrInconsistentProtocol, m.group, k)
	}
	return m.c.JoinGroup(ctx, req)
}

func (m groupMember) Sync(ctx context.Context, req groups.SyncRequest) (groups.SyncResult, error) {
	req.Group = m.group
	for id, a := range req.Assignments {
		if len(a) > MaxMemberAssignmentBytes {
			return groups.SyncResult{}, kind.Errorf(kind.ErrInvalidArgument,
				"group %q: the assignment of member %q has %d bytes, at most %d are allowed", m.group, id, len(a), MaxMemberAssignmentBytes)
		}
	}
	return m.c.SyncGroup(ctx, req)
}

func (m groupMember) Heartbeat(member string, generation int32) error {
	return m.c.Heartbeat(m.group, member, generation)
}

func (m groupMember) Leave(member string) error {
	return m.c.LeaveGroup(m.group, member)
}

// DescribeGroup is the group's state, protocol and members on the
// coordinator, once p may describe it: groups.ErrGroupNotFound when the
// coordinator does not hold it (it may still have committed offsets),
// *NotCoordinatorError on a node that does not coordinate the groups.
func (b *Broker) DescribeGroup(ctx context.Context, p Principal, group string) (groups.GroupDescription, error) {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Group(group)); err != nil {
		return groups.GroupDescription{}, err
	}
	c, err := b.groupCoordinator()
	if err != nil {
		return groups.GroupDescription{}, err
	}
	return c.Describe(group)
}

// GroupListing is a group in ListMemberGroups.
type GroupListing struct {
	groups.GroupListing
	// OffsetsOnly: the coordinator does not hold the group, which only
	// has committed offsets (State is Empty, ProtocolType is "").
	OffsetsOnly bool
	// ConsumerState, set for a server-assigned group (KIP-848's
	// protocol; ProtocolType "consumer"), is its state as Kafka names it
	// ("Empty", "Reconciling", "Stable"); State is the classic state
	// nearest to it (Reconciling: PreparingRebalance).
	ConsumerState string `json:",omitempty"`
}

// ListMemberGroups lists the groups p may describe: those the coordinator
// holds (classic and server-assigned), by name, then those that only have
// committed offsets, by name.
// On a node that does not coordinate the groups it is
// *NotCoordinatorError.
func (b *Broker) ListMemberGroups(ctx context.Context, p Principal) ([]GroupListing, error) {
	c, err := b.groupCoordinator()
	if err != nil {
		return nil, err
	}
	held, err := c.List()
	if err != nil {
		return nil, err
	}
	committed, err := b.ListGroups(ctx, p) // only what p may describe
	if err != nil {
		return nil, err
	}
	out := make([]GroupListing, 0, len(held)+len(committed))
	isHeld := make(map[string]bool, len(held))
	for _, l := range held {
		isHeld[l.Group] = true
		if b.allowed(p, auth.OpDescribe, auth.Group(l.Group)) {
			out = append(out, GroupListing{GroupListing: l})
		}
	}
	for _, l := range b.consumers.listings() {
		if isHeld[l.Group] {
			continue // an empty consumer group whose id a classic group uses now
		}
		isHeld[l.Group] = true
		if b.allowed(p, auth.OpDescribe, auth.Group(l.Group)) {
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(x, y GroupListing) int { return strings.Compare(x.Group, y.Group) })
	for _, g := range committed {
		if !isHeld[g] {
			out = append(out, GroupListing{GroupListing: groups.GroupListing{Group: g, State: groups.Empty}, OffsetsOnly: true})
		}
	}
	return out, nil
}

// CoordinatesGroups is nil when this node runs the group coordinator,
// else *NotCoordinatorError naming the node that does (the metadata
// leader), or the error that keeps it from running one (shutting down).
// It authorizes nothing: where the coordinator runs is public (Kafka's
// FindCoordinator, Metadata's controller).
func (b *Broker) CoordinatesGroups() error {
	_, err := b.groupCoordinator()
	return err
}

// groupCoordinator is the node's group coordinator, for this file's
// methods only: the front-ends reach the groups through them.
func (b *Broker) groupCoordinator() (*groups.Coordinator, error) {
	return b.coord.get()
}

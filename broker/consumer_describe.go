package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
)

// DescribeConsumerGroup describes a server-assigned group (Kafka's
// ConsumerGroupDescribe): State "Dead" when this coordinator has none of
// that name. It needs describe on the group.
func (b *Broker) DescribeConsumerGroup(ctx context.Context, p Principal, group string) (ConsumerGroupDescription, error) {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Group(group)); err != nil {
		return ConsumerGroupDescription{}, err
	}
	if _, err := b.groupCoordinator(); err != nil {
		b.consumers.forget()
		return ConsumerGroupDescription{}, err
	}
	d := ConsumerGroupDescription{Group: group, State: "Dead"}
	s := &b.consumers
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		return d, nil
	}
	b.expireLocked(g, time.Now())
	d.Epoch, d.AssignmentEpoch, d.Assignor = g.epoch, g.targetEpoch, g.assignor
	d.State = g.stateLocked()
	for _, m := range g.members {
		d.Members = append(d.Members, ConsumerMemberDescription{Member: m.id, InstanceID: m.instance, Rack: m.rack,
			ClientID: m.clientID, ClientHost: m.clientHost, MemberEpoch: m.epoch, Topics: m.topics, Regex: m.regex,
			Assignment: b.assignmentOf(m.assigned), Target: b.assignmentOf(g.target[m.id])})
	}
	slices.SortFunc(d.Members, func(x, y ConsumerMemberDescription) int { return cmpString(x.Member, y.Member) })
	return d, nil
}

// validateCommit checks an offset commit (or a transactional one) against
// the server-assigned group of that name, if this node has one: handled
// false leaves the commit to the classic groups. A member commits with its
// member epoch (or the one before it, whose partitions it may still be
// committing); a commit naming no member (an admin's, or a consumer that
// assigns itself partitions) is refused while the group has members; an
// empty group leaves its commits to the classic groups.
func (s *consumerGroups) validateCommit(group, member string, epoch int32) (handled bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil || len(g.members) == 0 {
		return false, nil // an empty group's id may be used by a classic group
	}
	if member == "" && epoch < 0 {
		return true, fmt.Errorf("%w %q in consumer group %q; join the group again", groups.ErrUnknownMember, member, group)
	}
	m := g.members[member]
	if m == nil {
		return true, fmt.Errorf("%w %q in consumer group %q; join the group again", groups.ErrUnknownMember, member, group)
	}
	if epoch != m.epoch && epoch != m.prevEpoch {
		return true, fmt.Errorf("%w: group %q: member %s commits with epoch %d, its epoch is %d", ErrStaleMemberEpoch, group, member, epoch, m.epoch)
	}
	return true, nil
}

// memberCount is how many members the server-assigned group of that name
// has here (0: none, or no such group).
func (s *consumerGroups) memberCount(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[group]; g != nil {
		return len(g.members)
	}
	return 0
}

// deleteEmpty deletes the server-assigned group of that name if it has no
// member (held: there was one), and refuses one that has members with
// groups.ErrGroupNotEmpty, as Kafka's DeleteGroups does.
func (s *consumerGroups) deleteEmpty(group string) (held bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		return false, nil
	}
	if n := len(g.members); n > 0 {
		return true, fmt.Errorf("%w: consumer group %q has %d members", groups.ErrGroupNotEmpty, group, n)
	}
	delete(s.groups, group)
	return true, nil
}

// stateLocked is g's state as Kafka names a consumer group's: "Empty"
// without members, "Reconciling" while a member is not at its target
// (or the target is behind the group epoch), else "Stable".
func (g *cgroup) stateLocked() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	for _, m := range g.members {
		if m.epoch != g.targetEpoch || len(m.revoking) > 0 || !m.assigned.equal(g.target[m.id]) || g.targetEpoch != g.epoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// listings is every server-assigned group here with its state, by name.
func (s *consumerGroups) listings() []GroupListing {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GroupListing, 0, len(s.groups))
	for _, name := range sortedKeys(s.groups) {
		st := s.groups[name].stateLocked()
		l := GroupListing{GroupListing: groups.GroupListing{Group: name, ProtocolType: groups.ConsumerProtocolType, State: groups.Stable},
			ConsumerState: st}
		switch st {
		case "Empty":
			l.State = groups.Empty
		case "Reconciling":
			l.State = groups.PreparingRebalance
		}
		out = append(out, l)
	}
	return out
}

// ValidateOffsetFetch checks an offset fetch that names a member of the
// group and its epoch (Kafka's OffsetFetch v9, which a KIP-848 consumer
// sends), as Kafka does: one naming no member with epoch -1 (an admin's,
// a classic consumer's) is not checked; otherwise, for a server-assigned
// group with members, the member must be in it (else
// groups.ErrUnknownMember) at that very epoch (else ErrStaleMemberEpoch).
// A classic group, or none, is not checked. It runs where the groups are
// coordinated (*NotCoordinatorError elsewhere) and needs describe on the
// group.
func (b *Broker) ValidateOffsetFetch(ctx context.Context, p Principal, group, member string, epoch int32) error {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Group(group)); err != nil {
		return err
	}
	if member == "" && epoch < 0 {
		return nil
	}
	if _, err := b.groupCoordinator(); err != nil {
		return err
	}
	s := &b.consumers
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil || len(g.members) == 0 {
		return nil
	}
	m := g.members[member]
	if m == nil {
		return fmt.Errorf("%w %q in consumer group %q; join the group again", groups.ErrUnknownMember, member, group)
	}
	if epoch != m.epoch {
		return fmt.Errorf("%w: group %q: member %s fetches offsets with epoch %d, its epoch is %d", ErrStaleMemberEpoch, group, member, epoch, m.epoch)
	}
	return nil
}

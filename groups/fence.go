package groups

import "fmt"

// ValidateCommit decides whether an offset commit may be stored; the core
// calls it just before it writes the offsets (package offsets). It refuses:
//
//   - an unknown member (removed after its session expired, say: a paused
//     zombie whose partitions were given to another member) with
//     ErrUnknownMember;
//   - a member naming another generation than the current one with a
//     *GenerationError (ErrIllegalGeneration), which names the current one;
//   - any commit while the group is CompletingRebalance, with
//     ErrRebalanceInProgress: the new assignment is not known yet. During
//     PreparingRebalance a member of the current generation may commit, so
//     that it can commit what it revokes before re-joining (as Kafka allows).
//
// A commit from outside the group (empty member id and generation -1:
// Kafka's standalone consumer, logd's manual assignment, an offsets reset)
// is accepted while the group has no members, and refused with
// ErrUnknownMember while it has. A commit counts as a sign of life, as in
// Kafka.
//
// The check and the write are not atomic. A commit checked just before a
// rebalance can still be written after it; that is harmless while the write
// takes less than the time a partition needs to change hands (the old owner
// must re-join or its session must expire first). A write that can stall
// longer than that (a Raft write during a leader election) could land after
// the new owner's commit and move the offset back; closing that window needs
// the core to order a group's commits with the check (as Kafka appends under
// the group lock), not more from this package.
func (c *Coordinator) ValidateCommit(group, memberID string, generation int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCoordinatorClosed
	}
	if memberID == "" && generation < 0 {
		if g := c.groups[group]; g != nil && len(g.members) > 0 {
			return fmt.Errorf("%w: group %q has %d members, so a commit from outside the group (no member id, generation -1) is refused; join the group or use another group name",
				ErrUnknownMember, group, len(g.members))
		}
		return nil
	}
	g, m, err := c.lookup(group, memberID)
	if err != nil {
		return err
	}
	if generation != g.generation {
		return &GenerationError{Group: g.name, Member: m.id, Given: generation, Current: g.generation}
	}
	if g.state == CompletingRebalance {
		return rebalancing(g.name)
	}
	c.touch(m)
	return nil
}

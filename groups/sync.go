package groups

import (
	"context"
	"fmt"
)

// SyncGroup returns the member's assignment for its generation. With
// client-side assignment the leader's call carries every member's share and
// makes the group Stable; the others block until it arrives, ctx ends, the
// generation is replaced (ErrRebalanceInProgress) or the member is removed
// (ErrUnknownMember). With server-side assignment the group is Stable when
// the join phase ends, so SyncGroup returns at once. If ctx ends first the
// member stays; it may sync again.
func (c *Coordinator) SyncGroup(ctx context.Context, req SyncRequest) (SyncResult, error) {
	c.mu.Lock()
	m, w, res, err := c.sync(req)
	c.mu.Unlock()
	if w == nil {
		return res, err
	}
	select {
	case out := <-w.ch:
		return out.res, out.err
	case <-c.done:
		return SyncResult{}, ErrCoordinatorClosed
	case <-ctx.Done():
	}
	c.mu.Lock()
	if m.sync == w {
		m.sync = nil
		c.mu.Unlock()
		return SyncResult{}, ctx.Err()
	}
	c.mu.Unlock()
	out := <-w.ch
	return out.res, out.err
}

func (c *Coordinator) sync(req SyncRequest) (*member, *syncWaiter, SyncResult, error) {
	g, m, err := c.lookup(req.Group, req.MemberID)
	if err != nil {
		return nil, nil, SyncResult{}, err
	}
	if (req.ProtocolType != "" && req.ProtocolType != g.protocolType) || (req.Protocol != "" && req.Protocol != g.protocol) {
		return nil, nil, SyncResult{}, fmt.Errorf("%w: group %q uses %q/%q, the sync names %q/%q",
			ErrInconsistentProtocol, g.name, g.protocolType, g.protocol, req.ProtocolType, req.Protocol)
	}
	if req.Generation != g.generation {
		return nil, nil, SyncResult{}, &GenerationError{Group: g.name, Member: m.id, Given: req.Generation, Current: g.generation}
	}
	c.touch(m)
	switch g.state {
	case CompletingRebalance:
		if m.id == g.leader && !m.serverAssign && !g.storing {
			c.setAssignments(g, req.Assignments)
		}
		// Having asked is what the sync window waits for (Kafka's pending
		// sync set): a follower blocked on a slow leader is not removed.
		c.synced(g, m)
		if g.state == Stable { // the assignment is set and recorded
			return m, nil, g.syncResult(m), nil
		}
		// Waits for the leader's assignment, or for its record.
		c.answerSync(m, SyncResult{}, rebalancing(g.name)) // a repeated sync replaces the first
		w := &syncWaiter{ch: make(chan syncOutcome, 1)}
		m.sync = w
		return m, w, SyncResult{}, nil
	case Stable:
		c.synced(g, m)
		return m, nil, g.syncResult(m), nil
	default: // PreparingRebalance: the generation is being replaced
		return nil, nil, SyncResult{}, rebalancing(g.name)
	}
}

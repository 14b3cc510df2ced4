package groups

import (
	"context"
	"fmt"
)

// JoinGroup adds a member to a group (MemberID empty) or re-joins one, and
// blocks until the join phase completes, ctx ends or the coordinator
// closes. A member that repeats its current metadata in a settled group gets
// the current generation at once, without a rebalance.
//
// If ctx ends first, a member this call created is removed again (nobody
// learned its id); an existing member stays, counted as joined, and can
// call JoinGroup again to get the result.
func (c *Coordinator) JoinGroup(ctx context.Context, req JoinRequest) (JoinResult, error) {
	req, err := c.checkJoin(req)
	if err != nil {
		return JoinResult{}, err
	}
	c.mu.Lock()
	g, m, w, res, err := c.join(req)
	c.mu.Unlock()
	if w == nil {
		return res, err
	}
	select {
	case out := <-w.ch:
		return out.res, out.err
	case <-c.done:
		return JoinResult{}, ErrCoordinatorClosed
	case <-ctx.Done():
	}
	c.mu.Lock()
	if m.join == w {
		m.join = nil
		if w.isNew && !c.closed && g.members[m.id] == m {
			c.dropMember(g, m)
			c.maybeCompleteJoin(g)
		}
		c.mu.Unlock()
		return JoinResult{}, ctx.Err()
	}
	c.mu.Unlock()
	out := <-w.ch // answered while we waited for the lock
	return out.res, out.err
}

// checkJoin validates req and fills in its defaults.
func (c *Coordinator) checkJoin(req JoinRequest) (JoinRequest, error) {
	if req.Group == "" {
		return req, fmt.Errorf("%w: the group name is empty", ErrInvalidGroup)
	}
	if len(req.Group) > MaxGroupBytes {
		return req, fmt.Errorf("%w: the group name has %d bytes, at most %d are allowed", ErrInvalidGroup, len(req.Group), MaxGroupBytes)
	}
	if req.SessionTimeout == 0 {
		req.SessionTimeout = c.cfg.DefaultSessionTimeout
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return req, fmt.Errorf("%w: %v is outside [%v, %v]", ErrInvalidSessionTimeout,
			req.SessionTimeout, c.cfg.MinSessionTimeout, c.cfg.MaxSessionTimeout)
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		return req, fmt.Errorf("%w: a join needs a protocol type and at least one protocol", ErrInconsistentProtocol)
	}
	if req.ServerAssign {
		if req.ProtocolType != ConsumerProtocolType {
			return req, fmt.Errorf("%w: server-side assignment needs protocol type %q, not %q",
				ErrInconsistentProtocol, ConsumerProtocolType, req.ProtocolType)
		}
		for _, p := range req.Protocols {
			if _, err := findAssignor(c.cfg.Assignors, p.Name); err != nil {
				return req, err
			}
		}
	}
	return req, nil
}

// join applies req to the group. It returns either an immediate answer
// (w == nil) or the waiter the answer will arrive on.
func (c *Coordinator) join(req JoinRequest) (g *group, m *member, w *joinWaiter, res JoinResult, err error) {
	if c.closed {
		return nil, nil, nil, res, ErrCoordinatorClosed
	}
	g = c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return nil, nil, nil, res, unknownMember(req.Group, req.MemberID)
		}
		g = &group{name: req.Group, members: make(map[string]*member)}
		c.groups[req.Group] = g
	}
	if req.MemberID != "" && g.members[req.MemberID] == nil {
		return nil, nil, nil, res, unknownMember(req.Group, req.MemberID)
	}
	if !g.accepts(req) {
		return nil, nil, nil, res, fmt.Errorf("%w: group %q uses protocol type %q and protocols its members all support; this member offers type %q with none of them",
			ErrInconsistentProtocol, g.name, g.protocolType, req.ProtocolType)
	}
	if req.MemberID == "" {
		m, w = c.joinNew(g, req)
		return g, m, w, res, nil
	}
	m = g.members[req.MemberID]
	w, res = c.joinKnown(g, m, req)
	return g, m, w, res, nil
}

// joinNew adds a member and starts (or joins) a join phase.
func (c *Coordinator) joinNew(g *group, req JoinRequest) (*member, *joinWaiter) {
	req.MemberID = newMemberID(req.ClientID)
	m := &member{id: req.MemberID, seq: g.nextSeq}
	g.nextSeq++
	m.update(req)
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[m.id] = m
	c.armSession(g, m)
	if g.state == PreparingRebalance && !g.notBefore.IsZero() {
		c.delayJoin(g)
		c.armJoinTimer(g)
	}
	return m, c.enterJoinPhase(g, m, true)
}

// joinKnown handles a join from an existing member (Kafka's rules): during
// a join phase it is counted; in a settled generation, the same metadata
// from a follower just gets the current generation back, anything else
// starts a rebalance.
func (c *Coordinator) joinKnown(g *group, m *member, req JoinRequest) (*joinWaiter, JoinResult) {
	settled := g.state == CompletingRebalance || g.state == Stable
	if settled && m.sameJoin(req) && (m.id != g.leader || g.state == CompletingRebalance) {
		c.touch(m)
		return nil, g.joinResult(m)
	}
	if req.SessionTimeout != m.sessionTimeout {
		// The running timer was armed for the old timeout; a shorter
		// one must not wait for it.
		m.update(req)
		c.armSession(g, m)
	}
	m.update(req)
	c.touch(m)
	return c.enterJoinPhase(g, m, false), JoinResult{}
}

// enterJoinPhase counts m as joined, starting a rebalance first if none is
// under way, and completes the phase if m was the last one missing.
func (c *Coordinator) enterJoinPhase(g *group, m *member, isNew bool) *joinWaiter {
	if g.state != PreparingRebalance {
		c.prepareRebalance(g)
	}
	// A second JoinGroup from a member already waiting replaces the first,
	// which learns the rebalance is still going on.
	c.answerJoin(m, JoinResult{}, rebalancing(g.name))
	w := newJoinWaiter(isNew)
	m.join, m.joined = w, true
	c.maybeCompleteJoin(g)
	return w
}

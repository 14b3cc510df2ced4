package groups

import (
	"context"
	"maps"
)

// Recording each generation (Config.States) and taking groups over
// (Restore). Every function here but Restore runs with c.mu held.

// recordState records g's state in the StateStore: its generation's
// assignment, or with no member, the group's removal. It reports whether
// the record is done (no store, an inline one, a removal nobody waits
// for, or a state too large to record, whose record is removed instead);
// else saved ends the generation's wait (storing).
func (c *Coordinator) recordState(g *group) (done bool) {
	if c.states == nil {
		return true
	}
	st := g.record()
	done = len(st.Members) == 0
	if !done && len(EncodeGroupState(st)) > MaxStateBytes {
		st.Members, done = nil, true
	}
	if len(st.Members) == 0 && !g.recorded {
		return true // nothing to remove
	}
	g.recorded = len(st.Members) > 0
	if _, ok := c.states.(inlineStore); ok {
		_ = c.states.Save(c.ctx, st) // MemoryStates never fails
		return true
	}
	c.save(g, st)
	return done
}

// save runs the store's Save for st, one at a time per group: a state to
// save while one is under way waits (only the newest) and is saved next,
// so a group's records are written in order.
func (c *Coordinator) save(g *group, st GroupState) {
	if g.saving {
		g.unsaved = &st
		return
	}
	g.saving = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, reserveTimeout)
		err := c.states.Save(ctx, st)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.saved(g, st, err)
	}()
}

// saved takes the answer of a Save. The generation waiting for it
// becomes Stable and its members learn their assignments; after a failure
// the save is tried again a second later, while the generation lasts (a
// coordinator that lost the metadata leadership is closed meanwhile).
func (c *Coordinator) saved(g *group, st GroupState, err error) {
	if c.closed || c.groups[g.name] != g {
		return
	}
	g.saving = false
	waited := g.storing && g.generation == st.Generation && len(st.Members) > 0
	if next := g.unsaved; next != nil {
		g.unsaved = nil
		c.save(g, *next)
	}
	switch {
	case !waited:
	case err == nil:
		c.stabilize(g)
	default:
		gen := g.generation
		c.clock.AfterFunc(reserveRetry, func() { c.retrySave(g, gen) })
	}
}

func (c *Coordinator) retrySave(g *group, gen int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[g.name] != g || !g.storing || g.generation != gen {
		return
	}
	c.save(g, g.record())
}

// Restore takes over a group as the previous coordinator recorded it
// (a GroupState from the StateStore), before its members call: they are
// members again, in the recorded generation with their assignments,
// Stable, and their sessions start now, so a member that keeps
// heartbeating (and committing) in its generation notices nothing.
//
// recorded is the group's newest generation in the GenerationStore. Above
// st's, the previous coordinator had started a rebalance (or formed a
// generation whose assignment no member learned): the group starts one at
// once, and its members learn of it at their next heartbeat, as they
// would have from the previous coordinator.
//
// A group the coordinator holds already is left as it is, and a st
// without members is ignored. The core calls Restore for every recorded
// group when it makes a coordinator, after the metadata it reads is
// current.
func (c *Coordinator) Restore(st GroupState, recorded int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCoordinatorClosed
	}
	if st.Group == "" || len(st.Members) == 0 || c.groups[st.Group] != nil {
		return nil
	}
	g := &group{name: st.Group, state: Stable, recorded: true, generation: st.Generation, protocolType: st.ProtocolType,
		protocol: st.Protocol, leader: st.Leader, members: make(map[string]*member, len(st.Members)),
		counts: maps.Clone(st.Counts)}
	for _, ms := range st.Members {
		if ms.MemberID == "" || g.members[ms.MemberID] != nil {
			continue
		}
		m := &member{id: ms.MemberID, clientID: ms.ClientID, clientHost: ms.ClientHost,
			sessionTimeout: ms.SessionTimeout, rebalanceTimeout: ms.RebalanceTimeout,
			protocolType: st.ProtocolType, serverAssign: ms.ServerAssign, seq: g.nextSeq, assignment: ms.Assignment}
		g.nextSeq++
		if m.sessionTimeout <= 0 {
			m.sessionTimeout = c.cfg.DefaultSessionTimeout
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		for _, name := range ms.Protocols {
			p := Protocol{Name: name}
			if name == st.Protocol {
				p.Metadata = ms.Metadata
			}
			m.protocols = append(m.protocols, p)
		}
		g.members[m.id] = m
	}
	if len(g.members) == 0 {
		return nil
	}
	g.chooseLeader()
	c.groups[g.name] = g
	for _, m := range g.members {
		c.armSession(g, m)
	}
	if recorded > g.generation {
		c.prepareRebalance(g)
	}
	return nil
}

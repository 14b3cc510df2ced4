package groups

import (
	"sort"
	"time"
)

// The state transitions. Every function here runs with c.mu held.

// prepareRebalance moves g to PreparingRebalance: every member must join
// again within the group's rebalance timeout. A blocked SyncGroup learns
// that its generation is over.
func (c *Coordinator) prepareRebalance(g *group) {
	for _, m := range g.members {
		m.joined = false
		m.pendingSync = false
		c.answerSync(m, SyncResult{}, rebalancing(g.name))
	}
	now := c.clock.Now()
	g.joinDeadline, g.notBefore = now.Add(g.rebalanceTimeout()), time.Time{}
	if g.state == Empty && c.cfg.InitialRebalanceDelay > 0 {
		g.notBefore = now
		c.delayJoin(g)
	}
	g.state, g.storing = PreparingRebalance, false
	g.rebalances++
	c.armJoinTimer(g)
	c.reserve(g) // in parallel with the members' joins
}

// delayJoin extends the initial rebalance delay of a group that was Empty:
// each new member gives others another delay to arrive, up to the end of
// the join phase (Kafka's group.initial.rebalance.delay.ms).
func (c *Coordinator) delayJoin(g *group) {
	if g.notBefore.IsZero() {
		return
	}
	g.notBefore = c.clock.Now().Add(c.cfg.InitialRebalanceDelay)
	if g.notBefore.After(g.joinDeadline) {
		g.notBefore = g.joinDeadline
	}
}

// armJoinTimer wakes the group at the end of the initial delay if one is
// pending, else at the end of the join phase.
func (c *Coordinator) armJoinTimer(g *group) {
	now := c.clock.Now()
	at := g.joinDeadline
	if now.Before(g.notBefore) {
		at = g.notBefore
	}
	c.armGroupTimer(g, at.Sub(now))
}

// maybeCompleteJoin ends the join phase once every member has joined (and
// the initial delay, if any, is over), or at once when no member is left.
func (c *Coordinator) maybeCompleteJoin(g *group) {
	if g.state != PreparingRebalance {
		return
	}
	if len(g.members) == 0 || (g.allJoined() && !c.clock.Now().Before(g.notBefore)) {
		c.completeJoin(g)
	}
}

// completeJoin ends the join phase: members that did not join are removed,
// the generation advances to the one recorded for it (waiting, still
// PreparingRebalance, until the GenerationStore has recorded one: members
// joining meanwhile are in), and every blocked JoinGroup is answered. If
// the leader asked for server-side assignment the assignment is computed
// here and the group is Stable before anyone syncs.
func (c *Coordinator) completeJoin(g *group) {
	for _, m := range g.members {
		if !m.joined {
			c.dropMember(g, m)
		}
	}
	c.stopGroupTimer(g)
	if len(g.members) == 0 {
		g.generation++ // no member learns it: nothing to record
		g.state, g.protocol, g.leader = Empty, "", ""
		g.awaitingGen = false
		c.recordState(g) // the group's record goes: it has no member
		return
	}
	if c.reserve(g); g.granted <= g.generation {
		g.awaitingGen = true // reserved completes the phase
		return
	}
	g.awaitingGen = false
	g.chooseLeader()
	g.protocol = g.chooseProtocol()
	g.generation, g.granted = g.granted, 0
	g.state = CompletingRebalance
	subs := g.subscriptions()
	g.counts = c.partitionCounts(subs)
	for _, m := range g.members {
		m.pendingSync = true
		m.assignment = nil
		c.touch(m)
	}
	c.armGroupTimer(g, g.rebalanceTimeout())
	if leader := g.members[g.leader]; leader.serverAssign {
		c.setAssignments(g, c.serverAssignment(g, subs))
	}
	for _, m := range g.members {
		c.answerJoin(m, g.joinResult(m), nil)
	}
}

// setAssignments installs the generation's assignment (members without
// an entry get an empty one) and records it (Config.States). Once it is
// recorded the group is Stable and every blocked SyncGroup is answered:
// at once without a store or with an inline one, else when the Save
// ends (storing meanwhile), so no member learns an assignment the next
// coordinator would not know.
func (c *Coordinator) setAssignments(g *group, assignments map[string][]byte) {
	for id, m := range g.members {
		m.assignment = assignments[id]
	}
	if c.recordState(g) {
		c.stabilize(g)
		return
	}
	g.storing = true
}

// stabilize makes g Stable and answers every blocked SyncGroup.
func (c *Coordinator) stabilize(g *group) {
	g.state, g.storing = Stable, false
	for _, m := range g.members {
		if m.sync != nil {
			c.answerSync(m, g.syncResult(m), nil)
			c.synced(g, m)
		}
	}
}

// synced records that m knows its assignment; when every member does, the
// sync window closes.
func (c *Coordinator) synced(g *group, m *member) {
	m.pendingSync = false
	if g.pendingSyncs() == 0 {
		c.stopGroupTimer(g)
	}
}

// subscriptions decodes the members' consumer-protocol subscriptions for
// the group's protocol, by member id (nil for another protocol type). An
// undecodable one (a Kafka client's bug) subscribes to nothing rather than
// failing the whole group.
func (g *group) subscriptions() []MemberSubscription {
	if g.protocolType != ConsumerProtocolType {
		return nil
	}
	out := make([]MemberSubscription, 0, len(g.members))
	for id, m := range g.members {
		sub, _ := DecodeSubscription(m.metadata(g.protocol))
		out = append(out, MemberSubscription{MemberID: id, Subscription: sub})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MemberID < out[j].MemberID })
	return out
}

// partitionCounts are the partition counts of the topics subs subscribe
// to, now: what CheckPartitions compares the topics with later.
func (c *Coordinator) partitionCounts(subs []MemberSubscription) map[string]int32 {
	if subs == nil {
		return nil
	}
	counts := make(map[string]int32)
	for _, s := range subs {
		for _, t := range s.Topics {
			if _, ok := counts[t]; !ok {
				counts[t] = c.cfg.Partitions(t)
			}
		}
	}
	return counts
}

// serverAssignment runs the group's protocol as a server-side Assignor over
// the members' subscriptions, with the partition counts of g.counts.
func (c *Coordinator) serverAssignment(g *group, subs []MemberSubscription) map[string][]byte {
	assignor, err := findAssignor(c.cfg.Assignors, g.protocol)
	if err != nil {
		// JoinGroup checked that a server-assigning member names only
		// known assignors, and the protocol is one it supports.
		return nil
	}
	out := make(map[string][]byte, len(subs))
	for id, tps := range assignor.Assign(subs, g.counts) {
		out[id] = EncodeAssignment(tps)
	}
	return out
}

// removeMember takes m out of the group for good (it left, or its session
// or a timeout expired) and rebalances the others.
func (c *Coordinator) removeMember(g *group, m *member) {
	c.dropMember(g, m)
	if g.state == Stable || g.state == CompletingRebalance {
		c.prepareRebalance(g)
	}
	c.maybeCompleteJoin(g)
}

// dropMember deletes m and answers its blocked calls; the caller decides
// what happens to the group.
func (c *Coordinator) dropMember(g *group, m *member) {
	delete(g.members, m.id)
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	err := unknownMember(g.name, m.id)
	c.answerJoin(m, JoinResult{}, err)
	c.answerSync(m, SyncResult{}, err)
	if g.leader == m.id {
		g.leader = ""
	}
}

// answerJoin answers m's blocked JoinGroup, if any. The answer restarts
// the member's session: it had no way to heartbeat while it waited.
func (c *Coordinator) answerJoin(m *member, res JoinResult, err error) {
	if m.join != nil {
		m.join.ch <- joinOutcome{res, err}
		m.join = nil
		c.touch(m)
	}
}

// answerSync is answerJoin for a blocked SyncGroup.
func (c *Coordinator) answerSync(m *member, res SyncResult, err error) {
	if m.sync != nil {
		m.sync.ch <- syncOutcome{res, err}
		m.sync = nil
		c.touch(m)
	}
}

// touch restarts m's session: any call from the member proves it alive.
func (c *Coordinator) touch(m *member) {
	m.deadline = c.clock.Now().Add(m.sessionTimeout)
}

// armSession (re)starts m's session timer. The timer does not move at each
// heartbeat: when it fires before the deadline it re-arms for the rest.
// timerSeq retires a replaced timer whose callback was already running.
func (c *Coordinator) armSession(g *group, m *member) {
	if m.timer != nil {
		m.timer.Stop()
	}
	c.touch(m)
	m.timerSeq++
	seq := m.timerSeq
	m.timer = c.clock.AfterFunc(m.sessionTimeout, func() { c.onSessionTimer(g, m, seq) })
}

func (c *Coordinator) onSessionTimer(g *group, m *member, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[g.name] != g || g.members[m.id] != m || m.timerSeq != seq {
		return
	}
	now := c.clock.Now()
	if m.join != nil || m.sync != nil {
		// A member blocked in JoinGroup or SyncGroup cannot heartbeat;
		// the rebalance and sync timeouts bound its wait instead.
		c.touch(m)
	}
	if now.Before(m.deadline) {
		m.timer = c.clock.AfterFunc(m.deadline.Sub(now), func() { c.onSessionTimer(g, m, seq) })
		return
	}
	m.timer = nil
	c.removeMember(g, m)
}

func (c *Coordinator) armGroupTimer(g *group, d time.Duration) {
	c.stopGroupTimer(g)
	g.timerSeq++
	seq := g.timerSeq
	g.timer = c.clock.AfterFunc(d, func() { c.onGroupTimer(g, seq) })
}

func (c *Coordinator) stopGroupTimer(g *group) {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.timerSeq++
}

// onGroupTimer ends a join phase that waited long enough (members that did
// not re-join are removed), or a sync window: members that never synced
// (a leader that never sends the assignment, say) are removed and the group
// rebalances without them.
func (c *Coordinator) onGroupTimer(g *group, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[g.name] != g || g.timerSeq != seq {
		return
	}
	g.timer = nil
	switch g.state {
	case PreparingRebalance:
		if !g.awaitingGen && c.clock.Now().Before(g.joinDeadline) {
			// The initial delay ended: complete if everyone is here, else
			// wait for the rest until the join phase ends.
			c.maybeCompleteJoin(g)
			if g.state == PreparingRebalance {
				c.armJoinTimer(g)
			}
			return
		}
		c.completeJoin(g)
	case CompletingRebalance, Stable:
		removed := false
		for _, m := range g.members {
			if m.pendingSync {
				c.dropMember(g, m)
				removed = true
			}
		}
		if removed {
			c.prepareRebalance(g)
			c.maybeCompleteJoin(g)
		}
	}
}

package groups

import (
	"bytes"
	"sort"
	"time"
)

// group is one group's soft state. Every field is guarded by the
// Coordinator's mutex.
type group struct {
	name         string
	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	nextSeq      int // join order, for choosing a leader

	// timer is the one group-level deadline: the end of the join phase in
	// PreparingRebalance, the end of the sync window afterwards. timerSeq
	// identifies the current arming so a stale callback does nothing.
	timer      Timer
	timerSeq   uint64
	rebalances uint64

	// joinDeadline ends the current join phase; notBefore, set when the
	// phase started from Empty, is the initial rebalance delay's end.
	joinDeadline time.Time
	notBefore    time.Time

	// granted is a generation recorded in the GenerationStore for this
	// group and not used yet (used only if above generation); reserving
	// says a store call for one is under way (generation.go).
	granted   int32
	reserving bool
	// awaitingGen: the join phase ended (completeJoin ran) and waits for
	// a recorded generation alone.
	awaitingGen bool

	// storing: the generation's assignment is set and waits for its
	// record (Config.States) before any member learns it; the group is
	// CompletingRebalance until then. saving: a Save is under way for the
	// group; unsaved is the newest state to save after it (takeover.go).
	storing bool
	saving  bool
	unsaved *GroupState
	// recorded: the last state given to the store had members (so a
	// removal must follow when the group empties).
	recorded bool

	// counts are the partition counts of the subscribed topics when the
	// current generation was formed (nil: not the consumer protocol);
	// CheckPartitions compares them with the topics'.
	counts map[string]int32
}

// member is one member's soft state.
type member struct {
	id, clientID, clientHost string
	sessionTimeout           time.Duration
	rebalanceTimeout         time.Duration
	protocolType             string
	protocols                []Protocol
	serverAssign             bool
	seq                      int // order of the member's first join

	joined      bool // joined in the current join phase
	pendingSync bool // has not synced the current generation yet
	assignment  []byte
	join        *joinWaiter // a JoinGroup blocked on the join phase
	sync        *syncWaiter // a SyncGroup blocked on the assignment

	deadline time.Time // session expiry; the timer re-arms itself lazily
	timer    Timer
	timerSeq uint64
}

type joinOutcome struct {
	res JoinResult
	err error
}

// joinWaiter is a blocked JoinGroup. Its channel holds one answer; whoever
// clears member.join sends it (answerJoin), so the waiter never blocks
// forever once it is no longer registered.
type joinWaiter struct {
	ch    chan joinOutcome
	isNew bool // the join that created the member: undone if abandoned
}

type syncOutcome struct {
	res SyncResult
	err error
}

type syncWaiter struct{ ch chan syncOutcome }

func newJoinWaiter(isNew bool) *joinWaiter {
	return &joinWaiter{ch: make(chan joinOutcome, 1), isNew: isNew}
}

// update records what a JoinGroup says about the member.
func (m *member) update(req JoinRequest) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.protocolType, m.protocols, m.serverAssign = req.ProtocolType, req.Protocols, req.ServerAssign
}

// sameJoin reports whether req repeats the member's current protocols and
// metadata: Kafka answers such a join with the current generation instead
// of starting a rebalance.
func (m *member) sameJoin(req JoinRequest) bool {
	if req.ProtocolType != m.protocolType || len(req.Protocols) != len(m.protocols) || req.ServerAssign != m.serverAssign {
		return false
	}
	for i, p := range req.Protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return true
		}
	}
	return false
}

// accepts reports whether a member with req's protocols may be in the group:
// same protocol type, and at least one protocol every other member also
// supports (Kafka's INCONSISTENT_GROUP_PROTOCOL check).
func (g *group) accepts(req JoinRequest) bool {
	others := 0
	for id := range g.members {
		if id != req.MemberID {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if req.ProtocolType != g.protocolType {
		return false
	}
	for _, p := range req.Protocols {
		all := true
		for id, m := range g.members {
			if id != req.MemberID && !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// chooseLeader keeps the leader while it is a member, else picks the member
// that joined first (Kafka's rule).
func (g *group) chooseLeader() {
	if _, ok := g.members[g.leader]; ok {
		return
	}
	g.leader = ""
	first := -1
	for id, m := range g.members {
		if first < 0 || m.seq < first {
			first, g.leader = m.seq, id
		}
	}
}

// chooseProtocol picks, among the protocols every member supports, the one
// most members prefer; ties go to the leader's order of preference.
func (g *group) chooseProtocol() string {
	leader := g.members[g.leader]
	var candidates []string
	for _, p := range leader.protocols {
		all := true
		for _, m := range g.members {
			all = all && m.supports(p.Name)
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if containsString(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// allJoined reports whether every member has joined the current phase.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if !m.joined {
			return false
		}
	}
	return true
}

// rebalanceTimeout is the longest rebalance timeout of the members: how long
// a join phase or a sync window lasts (Kafka's rule).
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		if m.rebalanceTimeout > d {
			d = m.rebalanceTimeout
		}
	}
	return d
}

// joinResult is what m learns of the current generation.
func (g *group) joinResult(m *member) JoinResult {
	res := JoinResult{
		MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, Leader: g.leader,
	}
	if m.id == g.leader && !m.serverAssign {
		for _, o := range g.membersInJoinOrder() {
			res.Members = append(res.Members, JoinedMember{MemberID: o.id, Metadata: o.metadata(g.protocol)})
		}
	}
	return res
}

func (g *group) syncResult(m *member) SyncResult {
	return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

func (g *group) membersInJoinOrder() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

func (g *group) pendingSyncs() int {
	n := 0
	for _, m := range g.members {
		if m.pendingSync {
			n++
		}
	}
	return n
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

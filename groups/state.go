package groups

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"
)

// GroupState is a group's membership in one completed generation: what a
// coordinator records (Config.States) once the generation's assignment is
// known and before any member learns it, and what the next coordinator
// takes over (Restore), so that a coordinator move is invisible to the
// members that keep heartbeating (Kafka keeps the same in
// __consumer_offsets). A GroupState without members says the group is
// Empty: the store drops the group's record.
type GroupState struct {
	Group        string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	// Counts are the subscribed topics' partition counts the generation
	// was formed with (consumer protocol only), for CheckPartitions.
	Counts  map[string]int32
	Members []MemberState // in join order
}

// MemberState is one member in a GroupState.
type MemberState struct {
	MemberID, ClientID, ClientHost   string
	SessionTimeout, RebalanceTimeout time.Duration
	ServerAssign                     bool
	// Protocols names the protocols the member supports, in its order of
	// preference; Metadata is its metadata for the group's protocol only
	// (the others matter only at the next join, which sends them again).
	Protocols  []string
	Metadata   []byte
	Assignment []byte
}

// StateStore records each group's last completed generation (GroupState)
// where the next coordinator finds it: in a cluster, the metadata group.
type StateStore interface {
	// Save records st durably, replacing the group's earlier record (a
	// st without members removes it). It may block on a replicated
	// write; ctx bounds it. A failed Save may or may not have recorded
	// st.
	Save(ctx context.Context, st GroupState) error
}

// MaxStateBytes bounds a group's encoded GroupState. A larger group
// (thousands of members with large subscriptions) is not recorded: its
// record is removed instead, and after a coordinator move its members
// join again as new members.
const MaxStateBytes = 8 << 20

// MemoryStates is a StateStore in memory, for tests and for coordinators
// that share it as a cluster's share the metadata. Its Save never blocks,
// so the Coordinator calls it inline.
type MemoryStates struct {
	mu     sync.Mutex
	states map[string]GroupState
}

// Save implements StateStore.
func (s *MemoryStates) Save(_ context.Context, st GroupState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]GroupState{}
	}
	if len(st.Members) == 0 {
		delete(s.states, st.Group)
		return nil
	}
	s.states[st.Group] = st
	return nil
}

// Load returns every recorded group, by name.
func (s *MemoryStates) Load() []GroupState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GroupState, 0, len(s.states))
	for _, st := range s.states {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

func (*MemoryStates) inline() {}

// record is g's GroupState now.
func (g *group) record() GroupState {
	st := GroupState{Group: g.name, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, Leader: g.leader, Counts: maps.Clone(g.counts)}
	for _, m := range g.membersInJoinOrder() {
		ms := MemberState{MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout, ServerAssign: m.serverAssign,
			Metadata: m.metadata(g.protocol), Assignment: m.assignment}
		for _, p := range m.protocols {
			ms.Protocols = append(ms.Protocols, p.Name)
		}
		st.Members = append(st.Members, ms)
	}
	return st
}

package broker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/share"
)

// The share groups (docs/share-groups.md): membership in memory on the
// group coordinator (the node that coordinates consumer groups), each
// share partition's state in package share, served by its partition's
// leader and made durable before any answer depends on it, in the store
// the control plane chooses (share_store.go: Pebble on a node that runs
// alone, the partition's Raft log in a cluster), the sessions of
// ShareFetch (share_fetch.go).

// Share-group timing.
const (
	ShareHeartbeatInterval = 5 * time.Second
	ShareSessionTimeout    = 45 * time.Second
)

// shareState is the node's share groups and sessions. Lock order: a
// sharePart's mu, then shareState.mu (never the other way: a change of
// every share partition of a group takes each one's mu after letting go
// of shareState.mu).
type shareState struct {
	cfgMu    sync.Mutex // serializes share group configuration changes (share_config.go)
	mu       sync.Mutex
	groups   map[string]*shareGroup
	sessions map[shareSessionKey]*shareSession
	ids      map[[16]byte]string // TopicByID's cache
	jitter   func(n int64) int64 // the redelivery backoff's draw; nil: random (tests set it)
}

type shareGroup struct {
	name    string
	epoch   int32
	cfg     atomic.Pointer[cachedShareConfig] // shareConfigOf
	members map[string]*shareMember
	parts   map[SharePartition]*sharePart
	topics  map[string]bool // every topic a member subscribed to here
}

type shareMember struct {
	id, clientID, clientHost string
	epoch, prevEpoch         int32
	topics                   []string
	assigned                 []ShareAssignment
	seen                     time.Time
}

// sharePart is one share partition: its state machine, guarded by mu,
// which is held across a change's durable write.
type sharePart struct {
	mu      sync.Mutex
	ref     SharePartition
	created int64 // the topic's CreatedMs when the state was made
	part    *partition.Partition
	p       *share.Partition // nil until loaded (shareCurrent)
	ver     uint64           // the stored version p is (shareStore)
	cfgGen  uint64           // the group configuration's change count p has (shareConfigOf)
	changed chan struct{}    // closed and replaced at every change
}

func (sp *sharePart) signal() {
	close(sp.changed)
	sp.changed = make(chan struct{})
}

// shareGroupLocked returns group, made on first use. b.share.mu is held.
func (b *Broker) shareGroupLocked(name string) *shareGroup {
	s := &b.share
	if s.groups == nil {
		s.groups = map[string]*shareGroup{}
		s.sessions = map[shareSessionKey]*shareSession{}
	}
	g := s.groups[name]
	if g == nil {
		g = &shareGroup{name: name,
			members: map[string]*shareMember{}, parts: map[SharePartition]*sharePart{}, topics: map[string]bool{}}
		s.groups[name] = g
	}
	return g
}

// ShareHeartbeat is a share group member's heartbeat: join (epoch 0),
// beat, or leave (epoch -1). The assignment is every partition of the
// topics the member subscribes to: members share records, not partitions.
func (b *Broker) ShareHeartbeat(ctx context.Context, r ShareHeartbeatRequest) (ShareHeartbeatResult, error) {
	if err := b.enter(); err != nil {
		return ShareHeartbeatResult{}, err
	}
	defer b.leave()
	if err := b.Authorize(ctx, r.Principal, auth.OpRead, auth.Group(r.Group)); err != nil {
		return ShareHeartbeatResult{}, err
	}
	if err := b.CoordinatesGroups(); err != nil {
		return ShareHeartbeatResult{}, err
	}
	if r.Group == "" || r.Member == "" {
		return ShareHeartbeatResult{Code: ShareInvalidRequest, Message: "a share group heartbeat names its group and member id"}, nil
	}
	now := time.Now()
	b.share.mu.Lock()
	g := b.shareGroupLocked(r.Group)
	gone := b.expireMembersLocked(g, now)
	res, left := b.heartbeatLocked(g, r, now)
	b.share.mu.Unlock()
	if left != "" {
		gone = append(gone, left)
	}
	b.shareMembersLeft(g, gone)
	return res, nil
}

func (b *Broker) heartbeatLocked(g *shareGroup, r ShareHeartbeatRequest, now time.Time) (ShareHeartbeatResult, string) {
	res := ShareHeartbeatResult{Interval: ShareHeartbeatInterval, MemberEpoch: r.MemberEpoch}
	m := g.members[r.Member]
	switch {
	case r.MemberEpoch == -1:
		if m != nil {
			delete(g.members, r.Member)
			g.epoch++
		}
		return res, r.Member
	case r.MemberEpoch == 0 && m == nil:
		if r.Topics == nil {
			return ShareHeartbeatResult{Code: ShareInvalidRequest, Message: "a joining member names the topics it subscribes to"}, ""
		}
		m = &shareMember{id: r.Member}
		g.members[r.Member] = m
		g.epoch++
	case m == nil:
		return ShareHeartbeatResult{Code: ShareUnknownMember, Message: "member " + r.Member + " is not in share group " + g.name + ": join again"}, ""
	case r.MemberEpoch != m.epoch && r.MemberEpoch != m.prevEpoch && r.MemberEpoch != 0:
		return ShareHeartbeatResult{Code: ShareFencedMemberEpoch, Message: "stale member epoch: join again"}, ""
	}
	m.seen, m.clientID, m.clientHost = now, r.ClientID, r.ClientHost
	if r.Topics != nil {
		m.topics = slices.Sorted(slices.Values(r.Topics))
		for _, t := range m.topics {
			g.topics[t] = true
		}
	}
	assigned := b.shareAssignment(m.topics)
	if m.epoch == 0 || !sameAssignment(assigned, m.assigned) {
		g.epoch++
		m.prevEpoch, m.epoch, m.assigned = m.epoch, g.epoch, assigned
		res.Assignment = assigned
	} else if r.MemberEpoch != m.epoch {
		res.Assignment = m.assigned // the last answer was lost
	}
	res.MemberEpoch = m.epoch
	if res.Assignment == nil && r.MemberEpoch == 0 {
		res.Assignment = m.assigned
	}
	return res, ""
}

// shareAssignment is every partition of the topics that exist.
func (b *Broker) shareAssignment(topics []string) []ShareAssignment {
	out := []ShareAssignment{}
	for _, t := range topics {
		c, err := b.topics.Config(t)
		if err != nil {
			continue
		}
		a := ShareAssignment{Topic: t, TopicID: TopicID(c)}
		for p := int32(0); p < c.Partitions; p++ {
			a.Partitions = append(a.Partitions, p)
		}
		out = append(out, a)
	}
	return out
}

func sameAssignment(a, b []ShareAssignment) bool {
	return slices.EqualFunc(a, b, func(x, y ShareAssignment) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// expireMembersLocked removes the members that missed their session
// timeout and returns them (their records are released after the lock).
func (b *Broker) expireMembersLocked(g *shareGroup, now time.Time) []string {
	var gone []string
	for id, m := range g.members {
		if now.Sub(m.seen) > ShareSessionTimeout {
			delete(g.members, id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		g.epoch++
	}
	return gone
}

// ShareConnClosed closes the share sessions the front-end connection conn
// opened (ShareFetchRequest.Conn) and releases what their members hold
// on this node, as Kafka does when a share consumer's connection drops:
// the records go to the other members now, not when their locks expire.
// A session the member opened again on another connection stays.
func (b *Broker) ShareConnClosed(conn uint64) {
	if conn == 0 {
		return
	}
	b.share.mu.Lock()
	closed := map[*shareGroup][]string{}
	for key, s := range b.share.sessions {
		if s.conn != conn {
			continue
		}
		delete(b.share.sessions, key)
		if g := b.share.groups[key.group]; g != nil {
			closed[g] = append(closed[g], key.member)
		}
	}
	b.share.mu.Unlock()
	for g, members := range closed {
		b.releaseRecords(g, members)
	}
}

// releaseMembers releases every record the members hold in g's share
// partitions and drops their sessions. A release changes no durable state.
func (b *Broker) releaseMembers(g *shareGroup, members []string) {
	if len(members) == 0 {
		return
	}
	b.share.mu.Lock()
	for _, m := range members {
		delete(b.share.sessions, shareSessionKey{g.name, m})
	}
	b.share.mu.Unlock()
	b.releaseRecords(g, members)
}

// releaseRecords releases every record the members hold in g's share
// partitions.
func (b *Broker) releaseRecords(g *shareGroup, members []string) {
	b.share.mu.Lock()
	parts := make([]*sharePart, 0, len(g.parts))
	for _, sp := range g.parts {
		parts = append(parts, sp)
	}
	b.share.mu.Unlock()
	now := time.Now().UnixMilli()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p == nil {
			sp.mu.Unlock()
			continue
		}
		changed := false
		for _, m := range members {
			changed = sp.p.ReleaseMember(m, now) || changed
		}
		if changed {
			sp.signal()
		}
		sp.mu.Unlock()
	}
}

// DescribeShareGroup describes a share group: members, assignments and
// share partitions: those of the topics its members subscribe to, that
// its members subscribed to while this node coordinated it, or that this
// node served, each described where it is led (share_remote.go). It
// needs describe on the group, and a partition describe on its topic (a
// partition not described, for that or because its leader did not
// answer, is left out).
func (b *Broker) DescribeShareGroup(ctx context.Context, p Principal, group string) (ShareGroupDescription, error) {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Group(group)); err != nil {
		return ShareGroupDescription{}, err
	}
	if err := b.CoordinatesGroups(); err != nil {
		return ShareGroupDescription{}, err
	}
	d := ShareGroupDescription{Group: group, State: "Dead"}
	b.share.mu.Lock()
	g := b.share.groups[group]
	if g == nil {
		b.share.mu.Unlock()
		return d, nil
	}
	d.State, d.Epoch = "Empty", g.epoch
	if len(g.members) > 0 {
		d.State = "Stable"
	}
	for _, m := range g.members {
		d.Members = append(d.Members, ShareMemberDescription{Member: m.id, ClientID: m.clientID, ClientHost: m.clientHost,
			MemberEpoch: m.epoch, Topics: m.topics, Assignment: m.assigned})
	}
	refs := b.shareGroupPartitionsLocked(g)
	b.share.mu.Unlock()
	slices.SortFunc(d.Members, func(x, y ShareMemberDescription) int { return cmpString(x.Member, y.Member) })
	if err := b.enter(); err != nil {
		return ShareGroupDescription{}, err
	}
	defer b.leave()
	denied := map[string]error{}
	for _, ref := range refs {
		ans, err := b.describeSharePart(ctx, p, g, ref, denied)
		if err != nil {
			b.logger.Debug("share group describe: a partition not described", "group", group, "topic", ref.Topic, "partition", ref.Partition, "err", err)
			continue
		}
		if ans.Stored {
			d.Partitions = append(d.Partitions, ans.Desc)
		}
	}
	slices.SortFunc(d.Partitions, func(x, y SharePartitionDescription) int {
		if c := cmpString(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition - y.Partition)
	})
	return d, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package broker

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/offsets"
)

// The consumer groups of KIP-848's protocol (docs/groups.md,
// "Server-assigned groups"): the coordinator computes each group's target
// assignment with its assignor whenever the group epoch moves (a member
// joins, leaves, changes its subscription, or a subscribed topic changes
// its partitions), and brings each member to its target one heartbeat at a
// time: partitions the member must give up are revoked first (its epoch
// stays until it reports them gone), partitions still held by another
// member are given once that member released them, and the member's epoch
// moves to the target's once it owns nothing outside its target. They run
// where the classic groups' coordinator runs (the node that answers
// groupCoordinator), in its memory; each group is recorded where the
// classic groups' state is (consumer_state.go), so that the next
// coordinator (a metadata leader, the node restarted) takes it over.

// consumerGroups is the node's server-assigned groups.
type consumerGroups struct {
	mu     sync.Mutex
	groups map[string]*cgroup
	writes uint64 // the records written (consumer_state.go)
}

type cgroup struct {
	name        string
	epoch       int32 // the group epoch
	targetEpoch int32 // the epoch target was computed at
	assignor    string
	topicsSeen  string // the subscribed topics' fingerprint at targetEpoch
	members     map[string]*cmember
	target      map[string]tpSet
	// changes counts the changes of what is recorded of the group
	// (consumer_state.go), recorded how many of them are: the group needs
	// a write while they differ. saving orders the group's writes.
	changes, recorded uint64
	saving            sync.Mutex
}

type cmember struct {
	id, instance, rack, clientID, clientHost string
	epoch, prevEpoch                         int32
	topics                                   []string
	regex                                    string
	re                                       *regexp.Regexp
	assignor                                 string
	rebalanceTimeout                         time.Duration
	assigned                                 tpSet // what the member was told it owns
	revoking                                 tpSet // told to give up, not yet reported gone
	revokeBy                                 time.Time
	seen                                     time.Time
	left                                     bool // a static member that left for now (epoch -2)

	// principal is who sent the member's last heartbeat: its regex is
	// resolved over the topics that principal may describe.
	principal Principal
}

// ConsumerHeartbeat is a consumer-group member's heartbeat (Kafka's
// ConsumerGroupHeartbeat). It needs read on the group.
func (b *Broker) ConsumerHeartbeat(ctx context.Context, r ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, error) {
	if err := b.enter(); err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	defer b.leave()
	if err := b.Authorize(ctx, r.Principal, auth.OpRead, auth.Group(r.Group)); err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	// A subscription by names needs describe on each (as Kafka checks
	// it); one by regex is resolved over the topics the member may
	// describe (subscriptions).
	for _, t := range r.Topics {
		if err := b.Authorize(ctx, r.Principal, auth.OpDescribe, auth.Topic(t)); err != nil {
			return ConsumerHeartbeatResult{}, err
		}
	}
	c, err := b.groupCoordinator()
	if err != nil {
		b.consumers.forget()
		return ConsumerHeartbeatResult{}, err
	}
	if code, msg := checkHeartbeat(r); code != ConsumerOK {
		return ConsumerHeartbeatResult{Code: code, Message: msg}, nil
	}
	if d, err := c.Describe(r.Group); err == nil && len(d.Members) > 0 {
		return ConsumerHeartbeatResult{Code: ConsumerNotConsumerGroup,
			Message: "group " + r.Group + " is a classic group with members: it is not a consumer group"}, nil
	}
	now := time.Now()
	s := &b.consumers
	s.mu.Lock()
	g := s.groups[r.Group]
	if g == nil {
		if r.MemberEpoch != 0 {
			s.mu.Unlock()
			return ConsumerHeartbeatResult{Code: ConsumerUnknownMember,
				Message: "member " + r.Member + " is not in group " + r.Group + ": join again"}, nil
		}
		g = newCGroup(r.Group)
		// A group that emptied kept its epoch as the group's recorded
		// generation (recordConsumerGroup): it goes on from there.
		if floor, err := b.offsets.Generation(r.Group); err == nil {
			g.epoch = max(floor, 0)
		}
		if s.groups == nil {
			s.groups = map[string]*cgroup{}
		}
		s.groups[r.Group] = g
	}
	b.expireLocked(g, now)
	res := b.consumerBeatLocked(g, r, now)
	w := g.pendingLocked()
	s.mu.Unlock()
	// What the answer tells the member is recorded before it learns it; a
	// heartbeat that changed nothing (and finds nothing unrecorded) writes
	// nothing.
	if err := b.recordConsumerGroup(ctx, g, w); err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	return res, nil
}

func newCGroup(name string) *cgroup {
	return &cgroup{name: name, members: map[string]*cmember{}, target: map[string]tpSet{}}
}

func checkHeartbeat(r ConsumerHeartbeatRequest) (ConsumerCode, string) {
	switch {
	case r.Group == "":
		return ConsumerInvalidRequest, "a consumer group heartbeat names its group"
	case len(r.Group) > offsets.MaxGroupBytes:
		return ConsumerInvalidRequest, fmt.Sprintf("a group id of %d bytes: at most %d are allowed", len(r.Group), offsets.MaxGroupBytes)
	case r.Member == "":
		return ConsumerInvalidRequest, "a consumer group heartbeat names its member id (the client makes it)"
	case !validUTF8(r):
		return ConsumerInvalidRequest, "the group id, member id, instance id, rack and subscribed topics of a heartbeat are UTF-8"
	case r.MemberEpoch < -2:
		return ConsumerInvalidRequest, fmt.Sprintf("member epoch %d: an epoch is -2, -1, 0 or above", r.MemberEpoch)
	case r.MemberEpoch == 0 && r.Topics == nil && r.Regex == nil:
		return ConsumerInvalidRequest, "a joining member names the topics it subscribes to"
	case r.Assignor != nil && *r.Assignor != "" && *r.Assignor != assignorUniform && *r.Assignor != assignorRange:
		return ConsumerUnsupportedAssignor, fmt.Sprintf("assignor %q: the assignors are %q and %q", *r.Assignor, assignorUniform, assignorRange)
	}
	if r.Regex != nil && *r.Regex != "" {
		if _, err := regexp.Compile(*r.Regex); err != nil {
			return ConsumerInvalidRequest, fmt.Sprintf("subscribed topic regex %q: %v", *r.Regex, err)
		}
	}
	return ConsumerOK, ""
}

// validUTF8 reports whether r's strings that a group's record keeps are
// UTF-8, as Kafka's protocol has them (the record would not keep others
// as they are).
func validUTF8(r ConsumerHeartbeatRequest) bool {
	ok := utf8.ValidString(r.Group) && utf8.ValidString(r.Member)
	for _, p := range []*string{r.InstanceID, r.RackID, r.Regex, r.Assignor} {
		ok = ok && (p == nil || utf8.ValidString(*p))
	}
	for _, t := range r.Topics {
		ok = ok && utf8.ValidString(t)
	}
	return ok
}

// forget drops every group: this node no longer coordinates them, and the
// members that carry on elsewhere would find stale ones here were it to
// coordinate again.
func (s *consumerGroups) forget() {
	s.mu.Lock()
	s.groups = nil
	s.mu.Unlock()
}

// expireLocked removes the members whose session ended, and those that
// did not give up revoked partitions within their rebalance timeout.
func (b *Broker) expireLocked(g *cgroup, now time.Time) {
	for _, m := range g.members {
		late := len(m.revoking) > 0 && now.After(m.revokeBy)
		if late || now.Sub(m.seen) > ConsumerSessionTimeout {
			g.remove(m)
		}
	}
}

func (g *cgroup) remove(m *cmember) {
	delete(g.members, m.id)
	delete(g.target, m.id)
	g.epoch++
	g.changes++
}

// consumerBeatLocked is the heartbeat of r.Member in g.
func (b *Broker) consumerBeatLocked(g *cgroup, r ConsumerHeartbeatRequest, now time.Time) ConsumerHeartbeatResult {
	res := ConsumerHeartbeatResult{Interval: ConsumerHeartbeatInterval, MemberEpoch: r.MemberEpoch}
	m := g.members[r.Member]
	switch {
	case r.MemberEpoch < 0:
		if m != nil && r.MemberEpoch == -2 && m.instance != "" {
			if !m.left {
				m.left = true // its partitions wait for its instance until its session ends
				g.changes++
			}
		} else if m != nil {
			g.remove(m)
		}
		return res
	case r.MemberEpoch == 0:
		var code ConsumerCode
		if m, code = g.join(r, m); code != ConsumerOK {
			return ConsumerHeartbeatResult{Code: code, Message: "instance id " + *r.InstanceID + " is held by another member of group " + g.name}
		}
	case m == nil:
		return ConsumerHeartbeatResult{Code: ConsumerUnknownMember, Message: "member " + r.Member + " is not in group " + g.name + ": join again"}
	case r.MemberEpoch != m.epoch && r.MemberEpoch != m.prevEpoch:
		return ConsumerHeartbeatResult{Code: ConsumerFencedMemberEpoch,
			Message: fmt.Sprintf("member epoch %d of %s is not its epoch %d: join again", r.MemberEpoch, r.Member, m.epoch)}
	}
	if m.left || m.clientID != r.ClientID || m.clientHost != r.ClientHost || m.principal != r.Principal {
		m.left, m.clientID, m.clientHost, m.principal = false, r.ClientID, r.ClientHost, r.Principal
		g.changes++
	}
	m.seen = now
	b.updateMember(g, m, r)
	resend := r.MemberEpoch == 0
	if r.Owned != nil {
		owned := b.ownedSet(r.Owned)
		if len(m.revoking) > 0 && len(m.revoking.and(owned)) == 0 {
			m.revoking = tpSet{}
			g.changes++
		}
		resend = resend || !owned.equal(m.assigned)
	}
	b.refreshTarget(g)
	if g.reconcile(m, now) || resend {
		res.Assignment = b.assignmentOf(m.assigned)
	}
	res.MemberEpoch = m.epoch
	return res
}

// join admits member r.Member (epoch 0). A static member that takes its
// instance id over from a member that left for now (or is the same id
// joining again) inherits its assignment without a rebalance; an instance
// id held by an active member is refused.
func (g *cgroup) join(r ConsumerHeartbeatRequest, m *cmember) (*cmember, ConsumerCode) {
	if r.InstanceID != nil && *r.InstanceID != "" {
		for _, o := range g.members {
			if o.instance != *r.InstanceID || o.id == r.Member {
				continue
			}
			if !o.left {
				return nil, ConsumerUnreleasedInstance
			}
			delete(g.members, o.id)
			g.target[r.Member] = g.target[o.id]
			delete(g.target, o.id)
			o.id = r.Member
			g.members[o.id] = o
			g.changes++
			return o, ConsumerOK
		}
	}
	if m != nil {
		g.remove(m) // a member joining again starts over
	}
	m = &cmember{id: r.Member, assigned: tpSet{}, revoking: tpSet{}, rebalanceTimeout: ConsumerSessionTimeout}
	if r.InstanceID != nil {
		m.instance = *r.InstanceID
	}
	g.members[m.id] = m
	g.epoch++
	g.changes++
	return m, ConsumerOK
}

// updateMember applies what the heartbeat changed of the member; a new
// subscription moves the group epoch.
func (b *Broker) updateMember(g *cgroup, m *cmember, r ConsumerHeartbeatRequest) {
	if r.RebalanceTimeout > 0 && r.RebalanceTimeout != m.rebalanceTimeout {
		m.rebalanceTimeout = r.RebalanceTimeout
		g.changes++
	}
	if r.RackID != nil && *r.RackID != m.rack {
		m.rack = *r.RackID
		g.changes++
	}
	if r.Assignor != nil && *r.Assignor != m.assignor {
		m.assignor = *r.Assignor
		g.changes++
	}
	if r.Topics != nil {
		ts := slices.Compact(slices.Sorted(slices.Values(r.Topics)))
		if !slices.Equal(ts, m.topics) {
			m.topics = ts
			g.epoch++
			g.changes++
		}
	}
	if r.Regex != nil && *r.Regex != m.regex {
		m.setRegex(*r.Regex)
		g.epoch++
		g.changes++
	}
}

// setRegex sets the member's subscribed topic regex (checked by
// checkHeartbeat, or recorded after that check).
func (m *cmember) setRegex(re string) {
	m.regex, m.re = re, nil
	if re != "" {
		m.re = regexp.MustCompile("^(?:" + re + ")$")
	}
}

// reconcile moves m toward its target and reports whether its assignment
// changed: partitions outside the target are revoked first; once none is
// left to revoke, the member takes the epoch of the target and the
// target's partitions that no other member holds.
func (g *cgroup) reconcile(m *cmember, now time.Time) bool {
	if len(m.revoking) > 0 {
		return false
	}
	t := g.target[m.id]
	if drop := m.assigned.minus(t); len(drop) > 0 {
		m.revoking = drop
		m.assigned = m.assigned.and(t)
		m.revokeBy = now.Add(m.rebalanceTimeout)
		g.changes++
		return true
	}
	busy := tpSet{}
	for _, o := range g.members {
		if o != m {
			for x := range o.assigned {
				busy[x] = true
			}
			for x := range o.revoking {
				busy[x] = true
			}
		}
	}
	changed := false
	for x := range t.minus(m.assigned) {
		if !busy[x] {
			m.assigned[x], changed = true, true
		}
	}
	if m.epoch != g.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.targetEpoch
		changed = true
	}
	if changed {
		g.changes++
	}
	return changed
}

// refreshTarget computes g's target assignment again when the group epoch
// moved past it or a subscribed topic changed (created, deleted, given
// partitions: a new group epoch).
func (b *Broker) refreshTarget(g *cgroup) {
	subs, counts, seen := b.subscriptions(g)
	if seen != g.topicsSeen {
		g.topicsSeen = seen
		g.changes++
		if g.targetEpoch == g.epoch {
			g.epoch++
		}
	}
	if g.targetEpoch == g.epoch && g.target != nil {
		return
	}
	in := assignInput{members: sortedKeys(g.members), subs: subs, counts: counts, prev: g.target}
	g.assignor = assignorUniform
	for _, id := range in.members {
		if a := g.members[id].assignor; a != "" {
			g.assignor = a
			break
		}
	}
	g.target = assign(g.assignor, in)
	g.targetEpoch = g.epoch
	g.changes++
}

// subscriptions resolves each member's subscription to the topics that
// exist (the virtual offsets topic included: groupTopic), with their
// partition counts, and fingerprints them. A regex matches only the topics
// its member's principal may describe (Kafka resolves it so too), so the
// fingerprint also lists what each regex resolved to: an ACL that shows
// or hides a topic to one member is a new subscription.
func (b *Broker) subscriptions(g *cgroup) (map[string]map[string]bool, map[string]int32, string) {
	subs := map[string]map[string]bool{}
	counts := map[string]int32{}
	var all []string
	for id, m := range g.members {
		set := map[string]bool{}
		names := m.topics
		if m.re != nil {
			if all == nil {
				all = b.groupTopicNames()
			}
			for _, t := range all {
				if m.re.MatchString(t) && b.allowed(m.principal, auth.OpDescribe, auth.Topic(t)) {
					names = append(names, t)
				}
			}
		}
		for _, t := range names {
			c, err := b.groupTopic(t)
			if err != nil {
				continue
			}
			set[t], counts[t] = true, c.Partitions
		}
		subs[id] = set
	}
	var fp strings.Builder
	for _, t := range sortedKeys(counts) {
		id, _ := b.TopicIDOf(t)
		fmt.Fprintf(&fp, "%s/%x/%d;", t, id, counts[t])
	}
	for _, id := range sortedKeys(g.members) {
		if g.members[id].re != nil {
			fmt.Fprintf(&fp, "%s=%s;", id, strings.Join(sortedKeys(subs[id]), ","))
		}
	}
	return subs, counts, fp.String()
}

// ownedSet is the partitions a member reports owning, by topic id.
func (b *Broker) ownedSet(owned []ConsumerTopicPartitions) tpSet {
	out := tpSet{}
	for _, t := range owned {
		name := t.Topic
		if name == "" {
			var ok bool
			if name, ok = b.TopicByID(t.TopicID); !ok {
				continue
			}
		}
		for _, p := range t.Partitions {
			out[tp{name, p}] = true
		}
	}
	return out
}

// assignmentOf is s by topic, with each topic's id.
func (b *Broker) assignmentOf(s tpSet) []ConsumerTopicPartitions {
	out := []ConsumerTopicPartitions{}
	for _, x := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].Topic == x.topic {
			out[n-1].Partitions = append(out[n-1].Partitions, x.p)
			continue
		}
		id, _ := b.TopicIDOf(x.topic)
		out = append(out, ConsumerTopicPartitions{Topic: x.topic, TopicID: id, Partitions: []int32{x.p}})
	}
	return out
}

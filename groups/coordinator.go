package groups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
)

// Coordinator holds every group this node coordinates. Its methods are safe
// for concurrent use. One mutex guards all groups: every operation is a few
// map updates, far below the network round trips that carry them; the
// longest is a server-side assignment (cooperative-sticky over 1,000
// partitions and 100 members: about 15 ms, BenchmarkCooperativeSticky).
// Per-group locks are the step if many large groups rebalance at once.
type Coordinator struct {
	cfg   Config
	clock Clock
	gens  GenerationStore
	// states records each generation's membership (nil: none is).
	states StateStore
	done   chan struct{} // closed by Close; wakes every blocked call

	// ctx ends at Close: it bounds the store calls in flight (wg), which
	// Close waits for.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	groups map[string]*group
}

// New returns a running Coordinator. It starts no goroutine of its own
// apart from calls to a blocking GenerationStore: the clock's timers call
// back into it. Close stops them.
func New(cfg Config) *Coordinator {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{cfg: cfg, clock: cfg.Clock, gens: cfg.Generations, states: cfg.States, done: make(chan struct{}),
		ctx: ctx, cancel: cancel, groups: make(map[string]*group)}
}

// Close stops every timer, forgets every group and makes every blocked and
// later call return ErrCoordinatorClosed. It cancels the GenerationStore
// calls under way and waits for them. It is idempotent.
func (c *Coordinator) Close() error {
	defer c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.cancel()
	close(c.done)
	for _, g := range c.groups {
		c.stopGroupTimer(g)
		for _, m := range g.members {
			if m.timer != nil {
				m.timer.Stop()
				m.timer = nil
			}
		}
	}
	c.groups = nil
	return nil
}

// List returns every group the coordinator holds, by name. Groups that only
// have committed offsets are not here; the core merges them in as Empty.
func (c *Coordinator) List() ([]GroupListing, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrCoordinatorClosed
	}
	out := make([]GroupListing, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, GroupListing{Group: g.name, ProtocolType: g.protocolType, State: g.state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// Describe reports a group's state, generation, protocol and members (in
// join order) with their assignments.
func (c *Coordinator) Describe(group string) (GroupDescription, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return GroupDescription{}, ErrCoordinatorClosed
	}
	g := c.groups[group]
	if g == nil {
		return GroupDescription{Group: group, State: Dead}, fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	}
	d := GroupDescription{
		Group: g.name, State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol,
		Generation: g.generation, Leader: g.leader, Rebalances: g.rebalances,
	}
	for _, m := range g.membersInJoinOrder() {
		md := MemberDescription{
			MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout,
			Metadata: m.metadata(g.protocol), Assignment: m.assignment,
		}
		if g.protocolType == ConsumerProtocolType {
			// An undecodable assignment (a client-side leader's bug) is
			// shown as raw bytes only.
			md.Partitions, _ = DecodeAssignment(m.assignment)
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// DeleteGroup forgets an Empty group (Kafka's DeleteGroups; the core deletes
// the group's committed offsets itself).
func (c *Coordinator) DeleteGroup(group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCoordinatorClosed
	}
	g := c.groups[group]
	if g == nil {
		return fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	}
	if len(g.members) > 0 {
		return fmt.Errorf("%w: %q has %d members", ErrGroupNotEmpty, group, len(g.members))
	}
	c.stopGroupTimer(g)
	delete(c.groups, group)
	return nil
}

// RequestRebalance starts a rebalance of a Stable or CompletingRebalance
// group, for a change the members cannot see themselves. Members learn of
// it through Heartbeat. Other states (and unknown groups) are left alone.
func (c *Coordinator) RequestRebalance(group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCoordinatorClosed
	}
	g := c.groups[group]
	if g != nil && (g.state == Stable || g.state == CompletingRebalance) {
		c.prepareRebalance(g)
	}
	return nil
}

// CheckPartitions rebalances every consumer-protocol group, Stable or
// CompletingRebalance, whose generation was formed with partition counts
// its subscribed topics no longer have: a topic gained partitions (they get
// owners), was deleted (count 0: its partitions leave the members'
// assignments) or appeared after the members subscribed to it. It returns
// the groups it rebalanced, by name. The core calls it at once after a
// topic change it made (AddPartitions, DeleteTopic) and every second, so a
// change made however, anywhere in a cluster, is seen. It is the one way
// topic changes reach groups: groups whose leader client assigns (Kafka's
// classic protocol) are rebalanced too, which their leader would also ask
// for once it sees the topic's metadata change.
func (c *Coordinator) CheckPartitions() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrCoordinatorClosed
	}
	var out []string
	for name, g := range c.groups {
		if g.state != Stable && g.state != CompletingRebalance {
			continue
		}
		for t, n := range g.counts {
			if c.cfg.Partitions(t) != n {
				c.prepareRebalance(g)
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// lookup returns the group and member a request names, or the error the
// request gets when either is unknown.
func (c *Coordinator) lookup(group, memberID string) (*group, *member, error) {
	if c.closed {
		return nil, nil, ErrCoordinatorClosed
	}
	g := c.groups[group]
	if g == nil {
		return nil, nil, unknownMember(group, memberID)
	}
	m := g.members[memberID]
	if m == nil {
		return nil, nil, unknownMember(group, memberID)
	}
	return g, m, nil
}

// newMemberID makes a member id as Kafka does: the client id, a dash and a
// random suffix, so ids are never reused and a removed member stays fenced.
func newMemberID(clientID string) string {
	if clientID == "" {
		clientID = "member"
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return clientID + "-" + hex.EncodeToString(b[:])
}

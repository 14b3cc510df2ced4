package groups

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

// The randomized model test: simulated logd clients following the
// cooperative protocol (re-join keeping what they hold, revoke what the
// assignment drops, re-join after a revocation) join, heartbeat, sync, leave
// and crash in random order while the fake clock jumps ahead, and the
// coordinator's invariants are checked after every step. At the end the
// survivors converge and must share every partition exactly once, in
// balance.

type simPhase int

const (
	needJoin simPhase = iota
	joining
	needSync
	syncing
	stable
	gone // left or crashed: never acts again
)

type simClient struct {
	name  string
	id    string
	gen   int32
	held  map[TopicPartition]bool
	phase simPhase
	// leaderShare is what this client, as an eager client-side leader,
	// sends in its SyncGroup.
	leaderShare map[string][]byte
}

type completion struct {
	c    *simClient
	join *JoinResult
	sync *SyncResult
	err  error
}

type model struct {
	t        *testing.T
	r        *rand.Rand
	h        *harness
	clients  []*simClient
	done     chan completion
	inflight int
	lastGen  int32
	closing  bool
	// eager clients are Kafka-style: they assign client-side (roundrobin)
	// and revoke everything before each re-join.
	eager bool
}

// TestRandomizedModel runs 12 seeds; LOGD_GROUPS_MODEL_SEEDS=N runs N (a
// longer hunt: go test -run RandomizedModel -timeout 0 ./groups/).
func TestRandomizedModel(t *testing.T) {
	seeds := 12
	if n, err := strconv.Atoi(os.Getenv("LOGD_GROUPS_MODEL_SEEDS")); err == nil && n > 0 {
		seeds = n
	} else if testing.Short() {
		seeds = 3
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			h := newHarnessWith(t, func(c *Config) {
				if seed%4 >= 2 {
					c.InitialRebalanceDelay = 2 * time.Second
				}
			})
			r := rand.New(rand.NewSource(seed))
			h.parts["orders"] = int32(1 + r.Intn(12))
			m := &model{t: t, r: r, h: h, done: make(chan completion, 64), eager: seed%2 == 1}
			for step := 0; step < 400; step++ {
				m.step()
				m.check(fmt.Sprintf("step %d", step))
			}
			m.converge()
			m.closing = true
			h.c.Close()
			for m.inflight > 0 {
				m.complete(<-m.done)
			}
		})
	}
}

func (m *model) step() {
	m.drain(m.r.Intn(4) == 0)
	switch x := m.r.Intn(100); {
	case x < 8 && len(m.clients) < 10:
		c := &simClient{name: fmt.Sprintf("c%d", len(m.clients)), gen: -1, held: map[TopicPartition]bool{}}
		m.clients = append(m.clients, c)
		m.startJoin(c)
	case x < 16:
		m.h.clock.Advance(time.Duration(m.r.Intn(4000)) * time.Millisecond)
	case len(m.clients) > 0:
		m.act(m.clients[m.r.Intn(len(m.clients))])
	}
}

func (m *model) act(c *simClient) {
	switch c.phase {
	case needJoin:
		m.startJoin(c)
	case needSync:
		m.startSync(c)
	case stable:
		switch x := m.r.Intn(100); {
		case x < 2:
			m.h.c.LeaveGroup("g", c.id) // may already be gone: any answer is fine
			c.phase = gone
		case x < 4:
			c.phase = gone // a crash: it just stops
		default:
			m.heartbeat(c)
		}
	}
}

func (m *model) heartbeat(c *simClient) {
	err := m.h.c.Heartbeat("g", c.id, c.gen)
	switch {
	case err == nil:
		// Nothing else acts between these two calls (timers fire only in
		// Advance), so a live member of the current generation may commit.
		if err := m.h.c.ValidateCommit("g", c.id, c.gen); err != nil {
			m.t.Fatalf("%s: heartbeat ok but commit refused: %v", c.name, err)
		}
	case errors.Is(err, ErrRebalanceInProgress):
		c.phase = needJoin
	case errors.Is(err, ErrUnknownMember):
		c.reset()
	default:
		// A stable member cannot fall a generation behind: the next
		// generation needs its re-join (or its removal).
		m.t.Fatalf("%s: heartbeat: %v", c.name, err)
	}
}

func (c *simClient) reset() {
	c.id, c.gen, c.held, c.phase = "", -1, map[TopicPartition]bool{}, needJoin
}

func (c *simClient) owned() []TopicPartition {
	var out []TopicPartition
	for p := range c.held {
		out = append(out, p)
	}
	sortPartitions(out)
	return out
}

func (m *model) startJoin(c *simClient) {
	c.phase = joining
	m.inflight++
	req := logdJoin("g", c.id, c.owned(), c.gen, "orders")
	if m.eager {
		c.held = map[TopicPartition]bool{} // revoke everything first
		req = kafkaJoin("g", c.id, RoundRobinAssignorName)
		req.Protocols[0].Metadata = EncodeSubscription(Subscription{Topics: []string{"orders"}, Generation: -1})
	}
	ctx, cancel := context.WithCancel(context.Background())
	if m.r.Intn(20) == 0 {
		cancel() // an impatient client: the join may or may not get through
	}
	go func() {
		defer cancel()
		res, err := m.h.c.JoinGroup(ctx, req)
		m.done <- completion{c: c, join: &res, err: err}
	}()
}

func (m *model) startSync(c *simClient) {
	c.phase = syncing
	m.inflight++
	req := SyncRequest{Group: "g", MemberID: c.id, Generation: c.gen, Assignments: c.leaderShare}
	go func() {
		res, err := m.h.c.SyncGroup(context.Background(), req)
		m.done <- completion{c: c, sync: &res, err: err}
	}()
}

// drain applies finished calls; with wait it gives in-flight calls a moment.
func (m *model) drain(wait bool) {
	for {
		select {
		case out := <-m.done:
			m.complete(out)
			continue
		default:
		}
		if !wait || m.inflight == 0 {
			return
		}
		select {
		case out := <-m.done:
			m.complete(out)
		case <-time.After(2 * time.Millisecond):
			return
		}
	}
}

func (m *model) complete(out completion) {
	m.inflight--
	c := out.c
	switch {
	case m.closing:
		return
	case errors.Is(out.err, ErrUnknownMember):
		c.reset()
	case errors.Is(out.err, ErrRebalanceInProgress), errors.Is(out.err, ErrIllegalGeneration), errors.Is(out.err, context.Canceled):
		c.phase = needJoin
	case out.err != nil:
		m.t.Fatalf("%s: %v", c.name, out.err)
	case out.join != nil:
		// The answer may be stale (the goroutine forwarding it was slow and
		// the group moved on): the member's next call finds out.
		c.id, c.gen, c.phase = out.join.MemberID, out.join.Generation, needSync
		c.leaderShare = nil
		if out.join.Leader == c.id && len(out.join.Members) > 0 {
			c.leaderShare = m.assignAsLeader(out.join.Members)
		}
	default:
		m.applyAssignment(c, out.sync.Assignment)
	}
}

// applyAssignment is the cooperative client: revoke what is gone, take what
// is new, re-join if anything was revoked. Taking a partition another
// current member still holds is the bug this whole protocol exists to stop.
func (m *model) applyAssignment(c *simClient, b []byte) {
	tps, err := DecodeAssignment(b)
	if err != nil {
		m.t.Fatal(err)
	}
	next := make(map[TopicPartition]bool)
	for _, p := range tps {
		next[p] = true
		if !c.held[p] {
			if o := m.holder(p, c); o != nil {
				m.t.Fatalf("%s given %v in generation %d while %s (a member) still holds it", c.name, p, c.gen, o.name)
			}
		}
	}
	revoked := false
	for p := range c.held {
		revoked = revoked || !next[p]
	}
	c.held, c.phase = next, stable
	if revoked {
		c.phase = needJoin
	}
}

// holder returns the client other than c that is a member of the group and
// holds p.
func (m *model) holder(p TopicPartition, c *simClient) *simClient {
	for _, o := range m.clients {
		if o != c && o.held[p] && m.isMember(o) {
			return o
		}
	}
	return nil
}

func (m *model) isMember(c *simClient) bool {
	m.h.c.mu.Lock()
	defer m.h.c.mu.Unlock()
	g := m.h.c.groups["g"]
	return c.id != "" && g != nil && g.members[c.id] != nil
}

// assignAsLeader is a Kafka client leading its group: it decodes every
// member's subscription and runs the assignor itself.
func (m *model) assignAsLeader(joined []JoinedMember) map[string][]byte {
	var members []MemberSubscription
	for _, j := range joined {
		sub, err := DecodeSubscription(j.Metadata)
		if err != nil {
			m.t.Fatalf("the leader cannot read %s's subscription: %v", j.MemberID, err)
		}
		members = append(members, MemberSubscription{MemberID: j.MemberID, Subscription: sub})
	}
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	out := make(map[string][]byte)
	for id, tps := range (RoundRobin{}).Assign(members, map[string]int32{"orders": m.h.parts["orders"]}) {
		out[id] = EncodeAssignment(tps)
	}
	return out
}

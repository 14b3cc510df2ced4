package cluster

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/time/rate"

	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/replication"
)

// Hibernation (Config.HibernateAfter, `logd serve
// --partition-hibernate-after`): a partition group that nobody
// used and that stored nothing for HibernateAfter goes to sleep on every
// replica, and costs nothing until it is used again (replication's
// sleep.go has the protocol and why it is safe). This file is the
// cluster's side of it:
//
//   - hibernateLoop, on each node, puts to sleep the idle groups it leads;
//   - Replica, the door of every use (produce, fetch, list offsets, delete
//     records, leader epochs), wakes a sleeping replica where the use
//     arrives and makes it stand for election, and answers at once that
//     the partition has no leader yet (NotLeaderError.Woke). It does not
//     wait for the election: front-ends start a connection's requests in
//     order (a Kafka produce or fetch names many partitions), so a wait
//     here would add up over every sleeping partition of a request. The
//     broker's produce waits for it (Cluster.AwaitLeader) in the wait of
//     the write it started (broker.StartProduce), after every partition
//     of the request has woken, so a produce is not bounced by the
//     partition's sleep; a read (a fetch, list offsets) answers "retry",
//     and its client's retry finds the group elected;
//   - wakes for uses are bounded (mayWake): a node wakes a group at most
//     WakeRate a second, and, when MaxAwake is set, only while fewer than
//     MaxAwake of its replicas are awake; a use beyond either is answered like one that
//     woke its group, without waking it (NotLeaderError.Deferred), and
//     broker.Produce asks again for up to 0.5 s. A burst of uses over
//     thousands of sleeping partitions is so served a slice at a time
//     instead of overloading the nodes with heartbeats and elections;
//   - a sleeping group's leader, for metadata and status, is the one its
//     replica knew when it fell asleep, unless that node is unreachable:
//     then the placement's first replica that is reachable (this node
//     counts as reachable), so that clients go there and the use wakes the
//     group on a live node (LeaderOf);
//   - reconciliation wakes a sleeping group whose voters differ from the
//     placement (a node removed, a replica moved), on the replica that led
//     it or on the placement's first replica;
//   - a new group (a topic created, partitions added) sleeps from the start
//     on every replica that bootstraps it, and is elected at its first
//     use; a restarted node puts back to sleep each replica it had
//     (replication.Replica.SleepOpened: its group may have fallen asleep
//     while the node was down; a peer's RPC wakes it if not). Both know
//     no leader: metadata then names the placement's first reachable
//     replica (the preferred leader), where a use wakes the group.
//     CreateTopic takes a partition asleep on a majority of its
//     replicas as usable.
//
// What keeps a group awake: any produce, any fetch (a consumer tailing a
// partition fetches it all the time), list offsets (consumer lag queries
// ask the leader for its end), and the barriers of reads at the high
// watermark. Committing offsets does not wake a group: while it sleeps,
// this node does not check the offset against the partition's high
// watermark (as a follower does not), the metadata leader stores it.

// DefaultHibernateAfter is `logd serve`'s --partition-hibernate-after
// (Config.HibernateAfter itself defaults to 0, never, for embedders and
// tests). Idle groups cost a node CPU all the time (1,000 awake idle
// partitions x 3 replicas: 32% of a core per node; asleep: 2.5-4.8%), and
// a group that sleeps costs its first use an election (tens of
// milliseconds on a quiet machine, a client retry through Kafka). A
// minute keeps any partition used more than once a minute awake, so a
// steady producer or a tailing consumer never sees a wake, and still puts
// a cluster's cold partitions to sleep soon after they go cold.
const DefaultHibernateAfter = time.Minute

// DefaultWakeGrace is how long a group that woke stays awake at least,
// idle or not, whatever the hibernation delay, unless the node has an
// awake bound (below). It came for requests over many partitions (list
// offsets of a whole topic): each wakes the sleeping partitions it names,
// and when it cannot finish before its client's deadline (each wake costs
// a Raft instance and an election), the client's next try must find them
// awake. Without a grace, a produce of one record to each of 3,000
// sleeping partitions with a 5 s delay saw about 200 of the groups it had
// woken fall asleep again before their record got through.
//
// With an awake bound (Config.MaxAwake), the grace is waived for groups
// used since they woke: they have served, and their room is
// wanted. A burst over 10,000 sleeping partitions is so served a slice at
// a time (with the grace for every woken group, each stayed awake 30 s,
// more than two cores can heartbeat). The bound's operator accepts that a
// request over more partitions than it can hold awake may not be served
// (docs/performance.md, "Known limits").
const DefaultWakeGrace = 30 * time.Second

// DefaultWakeRate is how many sleeping groups a second a node wakes for
// uses, at most (Config.WakeRate), and as many at once. A use of a
// sleeping group beyond it is answered as one that woke it (no leader yet:
// retry) without waking it, and the client's retry comes back for it.
// Waking is the dear part of a group's life: a Raft instance on every
// replica, an election, a no-op entry and the fsyncs of all three, then
// heartbeats while it is awake. It spreads the first burst of a produce
// to every partition of a sleeping topic (all 10,000 woke within 12 s);
// what keeps the nodes out of an election storm is the bound on awake
// replicas (Config.MaxAwake): with the pace alone, 848 of 10,000 records
// were acknowledged in two minutes (docs/performance.md).
const DefaultWakeRate = 200

// wakeLimiter is the pacing of wakes for a Config.WakeRate.
func wakeLimiter(r float64) *rate.Limiter {
	switch {
	case r < 0:
		return rate.NewLimiter(rate.Inf, 1)
	case r == 0:
		r = DefaultWakeRate
	}
	return rate.NewLimiter(rate.Limit(r), max(1, int(r)))
}

// DefaultMaxAwake is `logd serve`'s --partition-max-awake
// (Config.MaxAwake itself defaults to 0, no bound): 1,000 replicas per
// core the Go runtime may use (GOMAXPROCS), 2,000 on a 2-core machine.
// Below it, the bound changes nothing. It is for bursts over thousands of
// sleeping partitions: with logd serve's default delay (a minute) and
// 2,000, one record to each of 10,000 sleeping partitions was
// acknowledged in 55-110 s on 3 nodes sharing 2 cores; without
// a bound, every group woke within a minute and the nodes fell into an
// election storm. What it costs: more partitions per node than the bound
// used every second (a consumer tailing them) keep the others asleep, as
// below, and the node warns. It grows with the cores because what a node
// can keep awake does (each awake group heartbeats), so that a bigger
// machine is not starved by a bound made for a small one.
func DefaultMaxAwake() int { return 1000 * runtime.GOMAXPROCS(0) }

// A bound below the number of partitions clients use at once starves the
// rest: fullIdle makes room only from groups idle for a second, and a
// consumer tailing every partition of a topic fetches each all the time,
// so none of the groups it keeps awake ever falls idle, and the
// partitions beyond the bound are never woken (200 partitions tailed
// under a bound of 120: 20 of them are never read; fullIdle makes the
// groups cycle instead, about 2,500 sleeps a minute, and a read of them
// all still does not finish in time). What it is for is a burst over many
// sleeping partitions: 3,000 groups awake and idle, each with a replica
// on each of 3 nodes sharing 2 cores, took half a core on every node, and
// a produce of one record to each of 10,000 sleeping partitions, which
// with no bound threw the nodes into an election storm (194 records
// acknowledged in two minutes), was acknowledged in 69-106 s with 1,500.

// mayWake reports whether a use may wake a sleeping group now: the node
// has fewer than MaxAwake replicas awake, and the wake fits the pace.
func (c *Cluster) mayWake() bool {
	if m := c.cfg.MaxAwake; m > 0 && c.awake.get(c.rn) >= m {
		if now := time.Now().UnixNano(); now-c.fullWarned.Load() > int64(fullWarnEvery) {
			c.fullWarned.Store(now)
			c.logger.Warn("uses of sleeping partitions wait for room: this node has as many partition replicas awake as --partition-max-awake allows; they are served as others fall idle (raise the bound if clients use more partitions than that at once)",
				"max-awake", m)
		}
		return false
	}
	if !c.wakes.Allow() {
		return false
	}
	c.awake.n.Add(1) // until the next count, which includes it
	return true
}

// fullWarnEvery is how often at most a node warns that uses wait for
// room under its awake bound.
const fullWarnEvery = time.Minute

// awakeCount is a node's awake replicas, counted again at most every
// awakeCountEvery (a burst of uses over thousands of sleeping partitions
// would count them once per use), plus the wakes admitted since.
type awakeCount struct {
	n  atomic.Int64
	at atomic.Int64 // Unix nanoseconds of the count
}

// awakeCountEvery is how stale the count may be. Each count reads every
// replica of the node: every 50 ms, the counts were 2.7% of a node's CPU
// in a burst over 10,000 sleeping partitions. At
// 200 ms, room a sleep frees is seen up to 200 ms late, and replicas that
// peers woke (a use's wake at the leader wakes its followers) since the
// last count are not in it: at logd serve's pace of 200 wakes a second
// per node, at most 80 of them, against a bound of 2,000.
const awakeCountEvery = 200 * time.Millisecond

func (a *awakeCount) get(rn *replication.Node) int {
	if now := time.Now().UnixNano(); now-a.at.Load() > int64(awakeCountEvery) {
		a.at.Store(now)
		a.n.Store(rn.Awake())
	}
	return int(a.n.Load())
}

// fullIdle is how long a group that served since it woke must be idle to
// sleep while its leader's node is at its awake bound (Config.MaxAwake),
// instead of HibernateAfter: uses of sleeping groups wait for room then,
// and with a long delay (a minute, logd serve's default) a burst over
// thousands of sleeping partitions freed room a minute after each slice.
// Its groups are asleep, or awake on every node of the placement, so the
// nodes that lead them are at the bound too and make the room. A group
// used within fullIdle is never put to sleep for room.
const fullIdle = time.Second

// hibernateTimeout bounds the commit of a sleep marker.
const hibernateTimeout = 5 * time.Second

// aliveFor is how long a peer's reachability, once checked, is believed.
const aliveFor = 2 * time.Second

// hibernateParallel is how many groups the hibernate loop puts to sleep
// at once: each waits for its sleep marker's commit, and one after the
// other a node put 10-20 groups a second to sleep on a busy machine, fewer
// than a burst over 10,000 partitions woke (with --partition-max-awake
// 1500, 4,045 of its 10,000 records were not acknowledged in two minutes).
const hibernateParallel = 64

// hibernateLoop puts to sleep, every quarter of HibernateAfter (with an
// awake bound, at least every quarter of fullIdle), each group this node
// leads that has been idle for HibernateAfter (fullIdle while the node is
// at its bound), unless it woke less than WakeGrace ago (and, with an
// awake bound, nobody used it since), hibernateParallel at a time. Each
// is checked again just before its marker, and Hibernate gives up on a
// group used while its marker was on its way.
func (c *Cluster) hibernateLoop(ctx context.Context) {
	after, grace := c.cfg.HibernateAfter, cmp.Or(c.cfg.WakeGrace, DefaultWakeGrace)
	var delay time.Duration // after, or fullIdle while the node is at its bound
	idle := func(r *replication.Replica) bool {
		return !r.Asleep() && r.IsLeader() && r.Idle() >= delay &&
			(time.Since(r.Woke()) >= grace || (c.cfg.MaxAwake > 0 && r.UsedSinceWake()))
	}
	tick := max(after/4, 50*time.Millisecond)
	if c.cfg.MaxAwake > 0 {
		tick = min(tick, fullIdle/4)
	}
	every(ctx, tick, func() {
		delay = after
		if m := c.cfg.MaxAwake; m > 0 && c.awake.get(c.rn) >= m {
			delay = min(after, fullIdle)
		}
		var due []*replication.Replica
		for _, r := range c.rn.ReplicasUnordered() {
			if idle(r) {
				due = append(due, r)
			}
		}
		fanout.Run(ctx, len(due), hibernateParallel, func(_ context.Context, i int) {
			if !idle(due[i]) {
				return
			}
			if _, err := due[i].Hibernate(hibernateTimeout); err != nil {
				c.logger.Debug("putting an idle partition to sleep", "group", due[i].Group(), "err", err)
			}
		})
	})
}

// LeaderOf is the leader of a group as this node names it in metadata and
// status, and the term it knows, from its replica's status s and the
// group's placement set (preferred leader first): while the replica
// sleeps, the leader it knew then, unless that node is unreachable or it
// knew none (a group never elected since it was created or its node
// restarted). Then it names the first replica of set that is this node or
// reachable, where a use wakes the group and elects that replica: every
// node names the same one, so the first uses of a new topic's partitions
// spread over the preferred leaders instead of each piling on whichever
// node a client asked (all 10,000 partitions of a new topic on one node,
// whose heartbeats then overloaded it), and clients asking different
// nodes do not start rival elections. Without a set, this node.
func (c *Cluster) LeaderOf(s replication.ReplicaStatus, set []string) (string, uint64) {
	leader := string(s.LeaderID)
	if !s.Asleep || leader == c.self || (leader != "" && c.reachable(leader)) {
		return leader, s.Term
	}
	return c.waker(set), s.Term
}

// waker is where a sleeping group with no usable leader is woken: the
// first replica of its placement set (preferred leader first) that is this
// node or reachable; this node without one.
func (c *Cluster) waker(set []string) string {
	for _, id := range set {
		if id == c.self || c.reachable(id) {
			return id
		}
	}
	return c.self
}

// wakeForVoters wakes a sleeping replica whose group's voters differ from
// the placement's set, when this node led the group or is the set's first:
// only an awake leader can change the voters (matchVoters).
// The reconcile asks it of every sleeping replica every 2 s, so it
// allocates nothing unless it wakes one.
func (c *Cluster) wakeForVoters(set []string, r *replication.Replica) error {
	rec, ok := r.Slept()
	if !ok || !(rec.WasLeader || (len(set) > 0 && set[0] == c.self)) {
		return nil
	}
	servers, err := r.Servers()
	if err != nil {
		return err
	}
	if sameVoters(servers, set) {
		return nil
	}
	var voters []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
		}
	}
	c.logger.Info("waking a sleeping partition whose voters differ from the placement", "group", r.Group(), "voters", voters, "placement", set)
	return r.Wake(true)
}

// sameVoters reports whether the voters among servers are the node ids of
// set (in any order; neither names a node twice).
func sameVoters(servers []raft.Server, set []string) bool {
	n := 0
	for _, s := range servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		if !slices.Contains(set, string(s.ID)) {
			return false
		}
		n++
	}
	return n == len(set)
}

// reachability remembers whether other nodes' Raft ports answered lately.
type reachability struct {
	mu     sync.Mutex
	nodes  map[string]*peerCheck
	closed bool // Close waits for the checks under way
}

type peerCheck struct {
	alive    bool
	at       time.Time
	checking bool
}

// Reachable reports whether node id is this node or reachable.
func (c *Cluster) Reachable(id string) bool { return id == c.self || c.reachable(id) }

// reachable reports whether node id's Raft port accepted a connection
// within aliveFor. An unchecked or stale answer is refreshed in the
// background (one dial at a time per node), and until then the last
// answer stands: a node never checked counts as reachable.
func (c *Cluster) reachable(id string) bool {
	c.reach.mu.Lock()
	defer c.reach.mu.Unlock()
	if c.reach.nodes == nil {
		c.reach.nodes = map[string]*peerCheck{}
	}
	pc, ok := c.reach.nodes[id]
	if !ok {
		pc = &peerCheck{alive: true}
		c.reach.nodes[id] = pc
	}
	if !pc.checking && time.Since(pc.at) > aliveFor && c.loops != nil && !c.reach.closed {
		addr := c.node(id).RaftAddr
		pc.checking = true
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			alive := c.dialable(addr)
			c.reach.mu.Lock()
			pc.alive, pc.at, pc.checking = alive, time.Now(), false
			c.reach.mu.Unlock()
		}()
	}
	return pc.alive
}

// dialable reports whether a Raft connection to addr opens within a
// second (through the node's Raft dialer: its routes, its TLS).
func (c *Cluster) dialable(addr string) bool {
	if addr == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(c.loops, time.Second)
	defer cancel()
	conn, err := c.cfg.RaftDialer()(ctx, addr)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

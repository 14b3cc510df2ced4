package cluster

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/replication"
)

// Hibernation (Config.HibernateAfter, `logd serve
// --partition-hibernate-after`; issue 19): a partition group that nobody
// used and that stored nothing for HibernateAfter goes to sleep on every
// replica, and costs nothing until it is used again (replication's
// sleep.go has the protocol and why it is safe). This file is the
// cluster's side of it:
//
//   - hibernateLoop, on each node, puts to sleep the idle groups it leads,
//     and, beyond MaxAwake awake replicas on the node, without the wake
//     grace (toHibernate);
//   - Replica, the door of every use (produce, fetch, list offsets, delete
//     records, leader epochs), wakes a sleeping replica where the use
//     arrives and makes it stand for election, and answers at once that
//     the partition has no leader yet (retriable: gRPC UNAVAILABLE, Kafka
//     LEADER_NOT_AVAILABLE). It does not wait for the election: front-ends
//     start a connection's requests in order (a Kafka produce or fetch
//     names many partitions), so a wait would add up over every sleeping
//     partition of a request, where the retry after one client backoff
//     finds them all elected. A node wakes at most MaxWaking groups at once
//     for uses; a use beyond that is answered the same way without waking
//     (wakeForUse);
//   - a sleeping group's leader, for metadata and status, is the one its
//     replica knew when it fell asleep, unless that node is unreachable:
//     then this node names itself, so that clients come here and the use
//     wakes the group on a live node (LeaderOf);
//   - reconciliation wakes a sleeping group whose voters differ from the
//     placement (a node removed, a replica moved), on the replica that led
//     it or on the placement's first replica;
//   - a new group (a topic created, partitions added) sleeps from the start
//     on every replica that bootstraps it, and is elected at its first
//     use; a restarted node puts back to sleep each replica whose log ends
//     with a sleep marker (it was asleep when the node stopped). Both know
//     no leader: metadata then names the node answering, where a use wakes
//     the group. CreateTopic takes a partition asleep on a majority of its
//     replicas as usable.
//
// What keeps a group awake: any produce, any fetch (a consumer tailing a
// partition fetches it all the time), list offsets (consumer lag queries
// ask the leader for its end), and the barriers of reads at the high
// watermark. Committing offsets does not wake a group: while it sleeps,
// this node does not check the offset against the partition's high
// watermark (as a follower does not), the metadata leader stores it.

// DefaultWakeGrace is how long a group that woke stays awake at least,
// idle or not, whatever the hibernation delay: a request over many
// partitions (list offsets of a whole topic) is answered only once every
// one of them has a leader at the same time, and under load their
// elections, and the leader spreading after them, outlast a short delay.
// Woken partitions falling asleep again before the last one was elected
// kept torture seed 11's final read (200 partitions, a 2 s delay) from
// ever being answered.
const DefaultWakeGrace = 30 * time.Second

// hibernateTimeout bounds the commit of a sleep marker.
const hibernateTimeout = 5 * time.Second

// DefaultMaxAwake is how many of its replicas a node lets stay awake past
// the hibernation delay (Config.MaxAwake): beyond it, a group this node
// leads sleeps once idle for the delay, without the wake grace, idlest
// first. Measured here (docs/architecture.md), an awake group costs each
// of its nodes about 0.25 ms of CPU a second doing nothing, and thousands
// of them are more than two cores carry: leaders lose their leases and
// elections start again. It is a soft bound: a group in use (touched
// within the delay) stays awake whatever the count, so a request over
// more partitions than the bound (list offsets of a whole topic) is
// still answered once its retries have woken them all.
const DefaultMaxAwake = 500

// DefaultMaxWaking is how many sleeping groups a node wakes for uses at
// once (Config.MaxWaking): a group it woke counts until it has a leader,
// or for wakeHold. A use of a sleeping partition beyond that is answered
// "no leader yet, retry" without waking it. A produce to every partition
// of a sleeping topic otherwise wakes them all at once: thousands of
// elections on a few cores miss their timeouts and start again.
const DefaultMaxWaking = 64

// wakeHold is how long a group this node woke counts against MaxWaking
// without a leader: its election failed, and another may succeed.
const wakeHold = 3 * time.Second

// aliveFor is how long a peer's reachability, once checked, is believed.
const aliveFor = 2 * time.Second

// sleepsAtOnce bounds the sleep markers a node commits at once.
const sleepsAtOnce = 16

// hibernateLoop puts to sleep, every quarter of HibernateAfter, the groups
// this node leads that toHibernate picks.
func (c *Cluster) hibernateLoop(ctx context.Context) {
	every(ctx, max(c.cfg.HibernateAfter/4, 50*time.Millisecond), func() {
		due := c.toHibernate(c.rn.Partitions())
		fanout.Run(ctx, len(due), sleepsAtOnce, func(_ context.Context, i int) {
			if _, err := due[i].Hibernate(hibernateTimeout); err != nil {
				c.logger.Debug("putting an idle partition to sleep", "group", due[i].Group(), "err", err)
			}
		})
	})
}

// toHibernate picks, among parts, the awake groups this node leads that
// have been idle for HibernateAfter and woke at least WakeGrace ago; and,
// while more than MaxAwake of parts are awake besides those, as many more
// of the groups idle for HibernateAfter, idlest first, grace or not,
// except a group this node woke for a use that it has not served yet:
// with the client's retries slowed by thousands of others (a produce to
// every partition), it is what the next retry comes for, and putting it
// back to sleep first made a produce to 3,000 sleeping partitions wake
// each group more than twice.
func (c *Cluster) toHibernate(parts []*replication.Partition) []*replication.Partition {
	after, grace := c.cfg.HibernateAfter, cmp.Or(c.cfg.WakeGrace, DefaultWakeGrace)
	c.wakes.expire(grace)
	awake := 0
	var due, early []*replication.Partition
	for _, r := range parts {
		if r.Asleep() {
			continue
		}
		awake++
		switch {
		case !r.IsLeader() || r.Idle() < after:
		case time.Since(r.Woke()) >= grace:
			due = append(due, r)
		case !c.wakes.unserved(r, grace):
			early = append(early, r)
		}
	}
	over := awake - len(due) - cmp.Or(c.cfg.MaxAwake, DefaultMaxAwake)
	if over <= 0 {
		return due
	}
	slices.SortFunc(early, func(a, b *replication.Partition) int { return cmp.Compare(b.Idle(), a.Idle()) })
	return append(due, early[:min(over, len(early))]...)
}

// wakeBudget is the groups this node woke for uses that have no leader
// yet (Config.MaxWaking), and those that have served no use since.
type wakeBudget struct {
	mu       sync.Mutex
	waking   map[*replication.Partition]time.Time // when its slot was taken
	deferred prometheus.Counter
	// woken maps a group woken for a use to when it woke, until a use is
	// served by it (served) or the wake grace passed (unserved).
	woken sync.Map
}

// served records that r, leading here, serves a use.
func (b *wakeBudget) served(r *replication.Partition) {
	if _, ok := b.woken.Load(r); ok {
		b.woken.Delete(r)
	}
}

// unserved reports whether r woke here for a use less than grace ago and
// has not served one since.
func (b *wakeBudget) unserved(r *replication.Partition, grace time.Duration) bool {
	at, ok := b.woken.Load(r)
	if ok && (r.Asleep() || time.Since(at.(time.Time)) >= grace) {
		b.woken.Delete(r)
		return false
	}
	return ok
}

// expire forgets the woken groups that are asleep again or woke grace
// ago (a group led elsewhere is never served here).
func (b *wakeBudget) expire(grace time.Duration) {
	b.woken.Range(func(k, at any) bool {
		if k.(*replication.Partition).Asleep() || time.Since(at.(time.Time)) >= grace {
			b.woken.Delete(k)
		}
		return true
	})
}

// wakeForUse wakes r, asleep, for a use, and makes it stand for election,
// unless MaxWaking groups this node woke have no leader yet: then it
// leaves r asleep and reports woke false.
func (c *Cluster) wakeForUse(r *replication.Partition) (woke bool, err error) {
	b := &c.wakes
	b.mu.Lock()
	if b.waking == nil {
		b.waking = map[*replication.Partition]time.Time{}
	}
	for w, at := range b.waking {
		if id, _ := w.Leader(); time.Since(at) > wakeHold || w.Asleep() || id != "" {
			delete(b.waking, w)
		}
	}
	if len(b.waking) >= cmp.Or(c.cfg.MaxWaking, DefaultMaxWaking) {
		b.mu.Unlock()
		b.deferred.Inc()
		return false, nil
	}
	// Wake under the lock: a replica counted is awake, and one use at a
	// time wakes (Wake starts a Raft instance, a few hundred microseconds).
	defer b.mu.Unlock()
	if err := r.Wake(true); err != nil {
		return false, err
	}
	b.waking[r] = time.Now()
	b.woken.Store(r, time.Now())
	return true, nil
}

// LeaderOf is the leader of a group as this node names it in metadata and
// status, and the term it knows, from its replica's status s: while the
// replica sleeps, the leader it knew then, unless that node is
// unreachable, when this node names itself (a use here wakes the group and
// elects this replica).
func (c *Cluster) LeaderOf(s replication.PartitionStatus) (string, uint64) {
	leader := string(s.LeaderID)
	if s.Asleep && leader != c.self && (leader == "" || !c.reachable(leader)) {
		leader = c.self
	}
	return leader, s.Term
}

// wakeForVoters wakes a sleeping replica whose group's voters differ from
// the placement's set, when this node led the group or is the set's first:
// only an awake leader can change the voters (matchVoters).
func (c *Cluster) wakeForVoters(set []string, r *replication.Partition) error {
	rec, ok := r.Slept()
	if !ok {
		return nil
	}
	servers, err := r.Servers()
	if err != nil {
		return err
	}
	var voters []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
		}
	}
	slices.Sort(voters)
	want := slices.Sorted(slices.Values(set))
	if slices.Equal(voters, want) || !(rec.WasLeader || (len(set) > 0 && set[0] == c.self)) {
		return nil
	}
	c.logger.Info("waking a sleeping partition whose voters differ from the placement", "group", r.Group(), "voters", voters, "placement", set)
	return r.Wake(true)
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

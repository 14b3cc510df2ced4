package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication"
)

// A new group's first election (a topic created, partitions added, while
// groups do not hibernate: Config.HibernateAfter 0). Were every replica in
// the group's initial configuration to bootstrap it at once, whichever
// timed out first would lead it; the leader spreading (spreadLoop, every
// 10 s) would then hand two thirds of a new topic's leaderships to their
// preferred replicas (the placement's first), and a produce racing one of
// those transfers would be told "no leader" right after CreateTopic had
// said the topic takes writes. Kafka's controller elects the preferred
// replica of a new partition directly; logd lets it win the first
// election:
//
//   - the preferred replica bootstraps the group when it opens it, and
//     stands for election after its follower timeout F to 2F;
//   - every other initial replica opens its Raft without a configuration
//     (hashicorp/raft: a replica without one never stands for election,
//     grants its vote to a candidate, and takes the configuration from the
//     leader's first entries), and bootstraps the group itself only when,
//     2F after it opened it, it still has no state (firstElectionWait): the
//     preferred replica is down, or opened the group far later. It then
//     stands after another F to 2F, as a replica does when its leader dies.
//     A replica whose node knows the preferred one unreachable (its Raft
//     port refused a connection lately: reachable) bootstraps at once.
//
// Every replica bootstraps the same configuration (the metadata's initial
// placement), as entry 1 of term 1, so a replica that bootstraps late
// holds the entry the leader would have sent it; hashicorp/raft refuses
// to bootstrap a replica that has any state (a vote, an entry), so a late
// bootstrap never rewrites what it took from a leader. What is lost: a
// group whose preferred replica is down at creation, and not yet known to
// be, is elected about 2F later than before; and a group whose preferred replica won votes from
// both others and died before sending them its first entry waits for it
// to come back (both others then have a term and cannot bootstrap).
//
// Hibernating groups need none of this: they are born asleep on every
// replica, and their first use wakes them on the preferred replica
// (hibernate.go, preferredWaker).

// firstElectionWait is how long an initial replica other than the
// preferred one waits before bootstrapping a new group itself: the longest
// the preferred replica, opened at the same time, waits before it stands
// for election (hashicorp/raft's follower timeout is HeartbeatTimeout to
// twice that).
func (c *Cluster) firstElectionWait() time.Duration {
	return 2 * replication.RaftConfig(c.cfg.Raft).HeartbeatTimeout
}

// deferredBoots are the groups this node opened as a non-preferred initial
// replica without bootstrapping them, with when it may bootstrap them
// itself (reconcileReplica does, on the first reconcile after that: a
// timer kicks one).
type deferredBoots struct {
	mu sync.Mutex
	at map[string]deferredBoot
}

type deferredBoot struct {
	due     time.Time
	servers []raft.Server
}

// add defers group's bootstrap with servers until wait from now.
func (d *deferredBoots) add(group string, servers []raft.Server, wait time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[string]deferredBoot{}
	}
	d.at[group] = deferredBoot{due: time.Now().Add(wait), servers: servers}
}

// take returns the configuration to bootstrap group with, once its wait
// is over, and forgets the group; ok is false before that or when the
// group's bootstrap was not deferred.
func (d *deferredBoots) take(group string) (servers []raft.Server, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.at[group]
	if !ok || time.Now().Before(b.due) {
		return nil, false
	}
	delete(d.at, group)
	return b.servers, true
}

// forget drops group's deferred bootstrap (its replica was closed).
func (d *deferredBoots) forget(group string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, group)
}

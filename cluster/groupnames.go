package cluster

import (
	"sync"

	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// groupNames keeps meta.GroupOf's names of each topic incarnation's
// partition groups, for the loops that pass over every replica (the
// reconcile every 2 s, the leader spreading every 10 s, status) and for
// each produce's and fetch's lookup of its replica. Formatting 10,000
// names on each reconcile was an eighth of an idle node's CPU at 10,000
// partitions, most of it the garbage they left.
//
// A topic's slice only grows (partitions are added, never removed) and is
// never written below its length once handed out, so callers read it
// without the lock. Incarnations the metadata no longer has are dropped
// by keep.
type groupNames struct {
	mu sync.RWMutex // read-locked for names known: each produce asks
	m  map[topicIncarnation][]string
}

type topicIncarnation struct {
	name    string
	created int64
}

// topic returns the group names of cfg's partitions, at least n of them.
func (g *groupNames) topic(cfg partition.TopicConfig, n int) []string {
	k := topicIncarnation{cfg.Name, cfg.CreatedMs}
	g.mu.RLock()
	names := g.m[k]
	g.mu.RUnlock()
	if len(names) >= n {
		return names
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	names = g.m[k]
	if len(names) >= n {
		return names
	}
	for i := len(names); i < n; i++ {
		names = append(names, meta.GroupOf(cfg, int32(i)))
	}
	if g.m == nil {
		g.m = map[topicIncarnation][]string{}
	}
	g.m[k] = names
	return names
}

// of is the group name of cfg's partition p.
func (g *groupNames) of(cfg partition.TopicConfig, p int32) string {
	if p < 0 || p >= cfg.Partitions {
		return meta.GroupOf(cfg, p)
	}
	return g.topic(cfg, int(p)+1)[p]
}

// keep forgets the names of every topic incarnation st does not have.
func (g *groupNames) keep(st meta.State) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.m {
		if t, ok := st.Topics[k.name]; !ok || t.Config.CreatedMs != k.created {
			delete(g.m, k)
		}
	}
}

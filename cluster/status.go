package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/meta"
)

// StatusTimeout bounds how long Status waits for another node; a node
// that does not answer in time is reported not alive.
const StatusTimeout = time.Second

// Status is the cluster as one node reports it.
type Status struct {
	Self       string
	Nodes      []NodeStatus
	Partitions []ReplicaStatus
}

// NodeStatus is a member and whether it answered.
type NodeStatus struct {
	meta.Node
	Alive bool
}

// ReplicaStatus is a partition's Raft state as one replica sees it.
type ReplicaStatus struct {
	Topic                   string
	Partition               int32
	Leader                  string
	Replicas                []string
	CommitIndex, Term       uint64
	AppliedIndex, LastIndex uint64
	RaftState               string
}

// LocalStatus is this node's view of its own replicas; self carries the
// node's advertised addresses.
func (c *Cluster) LocalStatus(self meta.Node) Status {
	self.ID, self.RaftAddr = c.self, c.RaftAddr()
	resp := Status{Self: c.self, Nodes: []NodeStatus{{Node: self, Alive: true}}}
	st := c.State()
	for _, t := range st.Topics {
		for i := range t.Replicas {
			r := c.rn.Replica(c.groups.of(t.Config, int32(i)))
			if r == nil {
				continue
			}
			rs := r.Status()
			ids := make([]string, len(rs.Servers))
			for i, s := range rs.Servers {
				ids[i] = string(s.ID)
			}
			state := rs.State.String()
			if rs.Asleep {
				state = "Asleep"
			}
			leader, _ := c.LeaderOf(rs, t.Replicas[i])
			resp.Partitions = append(resp.Partitions, ReplicaStatus{
				Topic: t.Config.Name, Partition: int32(i), Leader: leader,
				Replicas: ids, CommitIndex: rs.CommitIndex, Term: rs.Term,
				RaftState:    state + " on " + c.self,
				AppliedIndex: rs.AppliedIndex, LastIndex: rs.LastIndex,
			})
		}
	}
	return resp
}

// Status reports the nodes and every partition's leader, replicas and Raft
// state: this node asks every other node for its replicas' state (in
// parallel, each bounded by StatusTimeout) and reports, for each
// partition, the view of the replica that leads it.
func (c *Cluster) Status(ctx context.Context, self meta.Node) Status {
	local := c.LocalStatus(self)
	st := c.State()
	resp := Status{Self: c.self}
	views := map[string][]ReplicaStatus{c.self: local.Partitions}
	alive := map[string]bool{c.self: true}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range st.Nodes {
		if n.ID == c.self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, StatusTimeout)
			defer cancel()
			other, err := c.peerStatus(cctx, n.RaftAddr)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			alive[n.ID] = true
			views[n.ID] = other.Partitions
		}()
	}
	wg.Wait()
	for _, n := range st.Nodes {
		resp.Nodes = append(resp.Nodes, NodeStatus{Node: n, Alive: alive[n.ID]})
	}
	sort.Slice(resp.Nodes, func(i, j int) bool { return resp.Nodes[i].ID < resp.Nodes[j].ID })
	idx := indexViews(views)
	for _, name := range slices.Sorted(maps.Keys(st.Topics)) {
		for i, set := range st.Topics[name].Replicas {
			resp.Partitions = append(resp.Partitions, bestView(name, int32(i), set, idx))
		}
	}
	return resp
}

// partKey names a partition.
type partKey struct {
	topic string
	id    int32
}

// viewIndex is every node's view of its replicas, by node and partition:
// looked up, not scanned, per partition (a scan of every view for each
// partition cost a status of 10,000 partitions seconds of CPU).
type viewIndex map[string]map[partKey]*ReplicaStatus

func indexViews(views map[string][]ReplicaStatus) viewIndex {
	idx := make(viewIndex, len(views))
	for n, vs := range views {
		m := make(map[partKey]*ReplicaStatus, len(vs))
		for k := range vs {
			m[partKey{vs[k].Topic, vs[k].Partition}] = &vs[k]
		}
		idx[n] = m
	}
	return idx
}

// bestView is a partition's status from the best view: a replica that
// says it leads, in the highest term; else any replica's.
func bestView(topic string, id int32, set []string, views viewIndex) ReplicaStatus {
	ps := ReplicaStatus{Topic: topic, Partition: id, Replicas: slices.Clone(set), RaftState: "no replica answered"}
	var best *ReplicaStatus
	bestLeads := false
	for _, n := range set {
		if v, ok := views[n][partKey{topic, id}]; ok {
			leads := strings.HasPrefix(v.RaftState, raft.Leader.String())
			if best == nil || (leads && (!bestLeads || v.Term > best.Term)) {
				best, bestLeads = v, leads
			}
		}
	}
	if best != nil {
		ps.Leader, ps.CommitIndex, ps.Term = best.Leader, best.CommitIndex, best.Term
		ps.RaftState = best.RaftState
	}
	return ps
}

// lagInterval is how often a leader measures its followers' lag.
const lagInterval = 5 * time.Second

// answeredAt is when each follower last answered a status call; a node
// whose last call failed has none.
type answeredAt struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *answeredAt) set(node string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at == nil {
		a.at = map[string]time.Time{}
	}
	if ok {
		a.at[node] = time.Now()
	} else {
		delete(a.at, node)
	}
}

// within reports whether node answered within d.
func (a *answeredAt) within(node string, d time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.at[node]
	return ok && time.Since(at) <= d
}

// ledPartition is a partition this node leads, for the lag loop.
type ledPartition struct {
	topic string
	id    int32
	last  uint64
}

// lagLoop measures, every lagInterval, how far each follower of the
// partitions this node leads is behind (the leader's last index minus the
// follower's applied index), for logd_raft_follower_lag_entries. A
// follower that does not answer is reported at -1.
func (c *Cluster) lagLoop(ctx context.Context) {
	every(ctx, lagInterval, func() {
		st := c.State()
		leading := map[string]ledPartition{} // by "topic/partition"
		followers := map[string]bool{}
		for _, tp := range st.Topics {
			for i, set := range tp.Replicas {
				r := c.rn.Replica(c.groups.of(tp.Config, int32(i)))
				if r == nil || !r.IsLeader() {
					continue
				}
				leading[fmt.Sprintf("%s/%d", tp.Config.Name, i)] = ledPartition{tp.Config.Name, int32(i), r.LastIndex()}
				for _, n := range set {
					if n != c.self {
						followers[n] = true
					}
				}
			}
		}
		type sample struct {
			topic, partition, follower string
			lag                        float64
		}
		var samples []sample
		for n := range followers {
			cctx, cancel := context.WithTimeout(ctx, StatusTimeout)
			resp, err := c.peerStatus(cctx, st.Nodes[n].RaftAddr)
			cancel()
			c.answered.set(n, err == nil)
			seen := map[string]uint64{}
			for _, p := range resp.Partitions {
				seen[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.AppliedIndex
			}
			for key, l := range leading {
				if !slices.Contains(st.Topics[l.topic].Replicas[l.id], n) {
					continue
				}
				lag := -1.0
				if applied, ok := seen[key]; ok && err == nil {
					lag = float64(l.last) - float64(applied)
				}
				samples = append(samples, sample{l.topic, strconv.Itoa(int(l.id)), n, lag})
			}
		}
		c.lag.Reset()
		for _, s := range samples {
			c.lag.WithLabelValues(s.topic, s.partition, s.follower).Set(s.lag)
		}
	})
}

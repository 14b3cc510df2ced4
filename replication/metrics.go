package replication

import (
	"strings"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	raftLabels      = []string{"group", "topic", "partition"}
	descRaftState   = prometheus.NewDesc("logd_raft_state", "Raft state of this replica: 0 follower, 1 candidate, 2 leader, 3 shutdown, 4 asleep (--partition-hibernate-after).", raftLabels, nil)
	descSleeps      = prometheus.NewDesc("logd_raft_sleeps_total", "Times a partition replica on this node fell asleep (its Raft stopped while the partition was idle).", nil, nil)
	descWakes       = prometheus.NewDesc("logd_raft_wakes_total", "Times a sleeping partition replica on this node woke (used, or a peer's Raft RPC).", nil, nil)
	descAwake       = prometheus.NewDesc("logd_raft_awake_replicas", "Partition replicas on this node whose Raft runs (not asleep): what their heartbeats cost grows with it.", nil, nil)
	descRaftLeader  = prometheus.NewDesc("logd_raft_leader", "1 when this replica leads its group.", raftLabels, nil)
	descRaftTerm    = prometheus.NewDesc("logd_raft_term", "Current Raft term of this replica.", raftLabels, nil)
	descRaftCommit  = prometheus.NewDesc("logd_raft_commit_index", "Raft commit index known to this replica.", raftLabels, nil)
	descRaftApplied = prometheus.NewDesc("logd_raft_applied_index", "Raft index this replica has applied.", raftLabels, nil)
	descRaftLast    = prometheus.NewDesc("logd_raft_last_index", "Last Raft index in this replica's log.", raftLabels, nil)
)

// stateAsleep is logd_raft_state's value for a sleeping replica.
const stateAsleep = 4

// Collector exports the Raft state of every replica open on a node. Register
// it once; it reads Replica.Status at each scrape.
type Collector struct{ n *Node }

// NewCollector returns the collector of n's replicas.
func NewCollector(n *Node) *Collector { return &Collector{n: n} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftState, descRaftLeader, descRaftTerm, descRaftCommit, descRaftApplied, descRaftLast, descSleeps, descWakes, descAwake} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	sleeps, wakes := c.n.SleepCounts()
	ch <- prometheus.MustNewConstMetric(descSleeps, prometheus.CounterValue, float64(sleeps))
	ch <- prometheus.MustNewConstMetric(descWakes, prometheus.CounterValue, float64(wakes))
	awake := 0
	for _, p := range c.n.ReplicasUnordered() {
		s := p.Status()
		if !s.Asleep {
			awake++
		}
		labels := groupLabels(s.Group)
		leader := 0.0
		if s.State == raft.Leader {
			leader = 1
		}
		state := float64(s.State)
		if s.Asleep {
			state = stateAsleep
		}
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{descRaftState, state},
			{descRaftLeader, leader},
			{descRaftTerm, float64(s.Term)},
			{descRaftCommit, float64(s.CommitIndex)},
			{descRaftApplied, float64(s.AppliedIndex)},
			{descRaftLast, float64(s.LastIndex)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v, labels...)
		}
	}
	ch <- prometheus.MustNewConstMetric(descAwake, prometheus.GaugeValue, float64(awake))
}

// groupLabels returns group, topic and partition ("" for the metadata
// group).
func groupLabels(group string) []string {
	if rest, ok := strings.CutPrefix(group, "p/"); ok {
		if i := strings.LastIndexByte(rest, '/'); i >= 0 {
			// A cluster names the topic's incarnation: "<topic>@<created>".
			topic, _, _ := strings.Cut(rest[:i], "@")
			return []string{group, topic, rest[i+1:]}
		}
	}
	return []string{group, "", ""}
}

package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/replication/meta"
)

// A node restarting is routine: its peers log no ERROR while it is away
// and while it opens its groups again (their Raft leaders heartbeat
// groups it has not opened yet), and the partitions other nodes lead
// keep their leader and term: those without a replica on it, and those
// of 3 replicas, whose leaders keep a quorum while it is away.
//
// The Raft timeouts are four times the harness's: on a loaded machine
// (the whole suite under -race on two cores) a 500 ms follower timeout
// expires now and then without any restart, and this test is about what
// the restart does.
func TestRejoinIsQuiet(t *testing.T) {
	h := newHarness(t, 3, func(c *Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = 2*time.Second, 2*time.Second
		c.Raft.LeaderLeaseTimeout = 1600 * time.Millisecond
	})
	two := h.createTopic(topicConfig("two", 6, 2))
	three := h.createTopic(topicConfig("three", 3, 3))
	h.waitLocal(two)
	h.waitLocal(three)
	type led struct {
		leader string
		term   uint64
	}
	before := map[string]led{}
	for _, cfg := range []struct {
		name string
		n    int32
	}{{"two", 6}, {"three", 3}} {
		for id := range cfg.n {
			l := h.partitionLeader(cfg.name, id)
			st := h.metaLeader().cl().State().Topics[cfg.name]
			if l.id == "n3" || (len(st.Replicas[id]) == 2 && slices.Contains(st.Replicas[id], "n3")) {
				// n3 leads it, or its leader loses its quorum while n3 is away.
				continue
			}
			r := l.cl().LocalReplica(meta.GroupOf(st.Config, id))
			before[fmt.Sprintf("%s/%d", cfg.name, id)] = led{l.id, r.Status().Term}
		}
	}
	if len(before) == 0 {
		t.Fatal("n3 leads every partition")
	}
	mark := len(h.log.String())
	n3 := h.node("n3")
	if err := n3.stop(); err != nil {
		t.Fatal(err)
	}
	// Away long enough for the leaders' heartbeats to it to fail and back off.
	time.Sleep(2 * time.Second)
	if err := n3.start(); err != nil {
		t.Fatal(err)
	}
	h.waitMembers()
	h.eventually("n3 follows a leader in every group it has", func() (bool, string) {
		c := n3.cl()
		for name, t := range c.State().Topics {
			for i, set := range t.Replicas {
				if !slices.Contains(set, "n3") {
					continue
				}
				r := c.LocalReplica(meta.GroupOf(t.Config, int32(i)))
				if r == nil {
					return false, fmt.Sprintf("no replica of %s/%d", name, i)
				}
				if id, _ := r.Leader(); id == "" {
					return false, fmt.Sprintf("%s/%d knows no leader", name, i)
				}
			}
		}
		return true, ""
	})
	// Long enough for a follower timeout to pass on every node.
	time.Sleep(2 * time.Second)
	for key, b := range before {
		name, id := "", int32(0)
		fmt.Sscanf(strings.Replace(key, "/", " ", 1), "%s %d", &name, &id)
		l := h.partitionLeader(name, id)
		st := h.metaLeader().cl().State().Topics[name]
		term := l.cl().LocalReplica(meta.GroupOf(st.Config, id)).Status().Term
		if l.id != b.leader || term != b.term {
			t.Errorf("%s: led by %s in term %d before n3's restart, by %s in term %d after", key, b.leader, b.term, l.id, term)
		}
	}
	for _, line := range strings.Split(h.log.String()[mark:], "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("logged while n3 restarted: %s", line)
		}
	}
}

// A node that stopped while a group was awake, and restarts after the
// group fell asleep on the other replicas, does not wake the group: its
// replica, which knows nothing of the sleep, waits for a peer's RPC
// instead of standing for election and waking the others.
func TestRestartDoesNotWakeSleepingGroups(t *testing.T) {
	h := newHarness(t, 3, func(c *Config) {
		c.HibernateAfter, c.WakeGrace = 300*time.Millisecond, 100*time.Millisecond
	})
	cfg := h.createTopic(topicConfig("z", 1, 3))
	h.waitLocal(cfg)
	tp := h.metaLeader().cl().State().Topics["z"]
	var down *testNode
	for _, nd := range h.all() {
		if nd.id != tp.Replicas[0][0] {
			down = nd // not the preferred leader, which the use elects
		}
	}
	h.useFrom(h.node(tp.Replicas[0][0]), "z", 0)
	if err := down.stop(); err != nil {
		t.Fatal(err)
	}
	h.asleepEverywhere(tp, 0)
	type counts struct{ wakes, term uint64 }
	seen := func() map[string]counts {
		m := map[string]counts{}
		for _, nd := range h.running() {
			if nd == down {
				continue
			}
			r := nd.cl().LocalReplica(meta.GroupOf(cfg, 0))
			_, w := r.SleepCounts()
			m[nd.id] = counts{uint64(w), r.Status().Term}
		}
		return m
	}
	before := seen()
	if err := down.start(); err != nil {
		t.Fatal(err)
	}
	h.waitMembers()
	// Longer than the restarted replica's election timeout (at most twice
	// the follower timeout, 2 × 500 ms).
	time.Sleep(3 * time.Second)
	if after := seen(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the sleeping group's wakes and term on the other nodes: %v before %s restarted, %v after", before, down.id, after)
	}
}

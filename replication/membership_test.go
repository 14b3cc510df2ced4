package replication_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// A node joins a group and another leaves while producers append: the
// group keeps acknowledging, the new replica ends byte-identical, nothing
// acknowledged is lost and per-key order holds.
func TestNodeJoinsAndLeavesWhileProducing(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	ps := make([]*producer, 3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ps {
		ps[i] = &producer{key: fmt.Sprintf("k%d", i), acked: map[int]int64{}}
		wg.Add(1)
		go func() { defer wg.Done(); ps[i].run(t, c, stop) }()
	}
	time.Sleep(500 * time.Millisecond)

	n4 := c.AddNode()
	if err := c.Leader(group).Replica(group).AddVoter(raft.ServerID(n4.ID), raft.ServerAddress(n4.Addr), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)

	// Remove the leader itself: the hardest member to lose.
	gone := c.Leader(group)
	if err := gone.Replica(group).RemoveServer(raft.ServerID(gone.ID), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Kill(gone.ID)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	c.WaitConverged(group, 60*time.Second)
	st := c.Leader(group).Replica(group).Status()
	var ids []string
	for _, s := range st.Servers {
		ids = append(ids, string(s.ID))
	}
	if len(ids) != 3 || slices.Contains(ids, gone.ID) || !slices.Contains(ids, n4.ID) {
		t.Fatalf("configuration %v after adding %s and removing %s", ids, n4.ID, gone.ID)
	}
	for _, p := range ps {
		if len(p.acked) == 0 {
			t.Fatalf("key %s: nothing acknowledged", p.key)
		}
		for _, n := range c.Up() {
			p.check(t, n)
		}
	}
}

// Leaders return to their preferred nodes (one group each) after a node
// failure moved one: the mechanism of leader spreading.
func TestLeadershipSpreadAcrossNodes(t *testing.T) {
	groups := []string{"p/s/0", "p/s/1", "p/s/2"}
	c := clustertest.New(t, clustertest.Options{Groups: groups})
	nodes := c.Nodes()
	preferred := func(g string) (raft.ServerID, bool) {
		i := slices.Index(groups, g)
		if i < 0 {
			return "", false
		}
		return raft.ServerID(nodes[i].ID), true
	}
	spread := func() {
		t.Helper()
		for _, n := range c.Up() {
			if _, err := n.Replication().SpreadLeaders(context.Background(), preferred); err != nil {
				t.Fatal(err)
			}
		}
		for i, g := range groups {
			if leader := c.Leader(g); leader != nodes[i] {
				t.Fatalf("group %s led by %s, want %s", g, leader.ID, nodes[i].ID)
			}
		}
	}
	spread()

	// n1 fails: group 0 moves elsewhere; back up, spreading returns it.
	c.Kill(nodes[0].ID)
	if leader := c.Leader(groups[0]); leader == nodes[0] {
		t.Fatal("a killed node leads")
	}
	c.Restart(nodes[0].ID)
	for _, g := range groups {
		c.WaitConverged(g, 30*time.Second)
	}
	spread()
	for i, g := range groups {
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("k"), Value: []byte(g)}})
		if _, err := c.Append(g, b, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		st := nodes[i].Replica(g).Status()
		if st.State != raft.Leader || st.HighWatermark != 1 || st.CommitIndex < st.LastIndex {
			t.Fatalf("group %s status on its leader: %+v", g, st)
		}
	}
}

// SpreadLeaders stops once its context is done: a node shutting down does
// not first transfer, one ElectionTimeout each when the preferred leader is
// down, every group it leads (a node leading hundreds of them ignored
// SIGTERM for minutes).
func TestSpreadLeadersStopsWhenCancelled(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	leader := c.Leader(group)
	var other *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			other = n
			break
		}
	}
	preferred := func(string) (raft.ServerID, bool) { return raft.ServerID(other.ID), true }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	moved, err := leader.Replication().SpreadLeaders(ctx, preferred)
	if !errors.Is(err, context.Canceled) || len(moved) != 0 {
		t.Fatalf("SpreadLeaders with a cancelled context: moved %v, error %v; want none moved, context.Canceled", moved, err)
	}
	if st := leader.Replica(group).Status(); st.State != raft.Leader {
		t.Fatalf("the leader gave up its group under a cancelled SpreadLeaders: %+v", st)
	}
	// The same call, not cancelled, does move it (the test above would
	// otherwise pass for a SpreadLeaders that never moves anything).
	if moved, err := leader.Replication().SpreadLeaders(context.Background(), preferred); err != nil || len(moved) != 1 {
		t.Fatalf("SpreadLeaders: moved %v, error %v", moved, err)
	}
}

// acks=leader returns once the leader's own log holds the batch, before a
// quorum does; acks=all waits for the commit.
func TestAcksLeaderReturnsBeforeCommit(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	leader := c.Leader(group)
	p := leader.Replica(group)
	one := func(v string) []byte {
		return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("k"), Value: []byte(v)}, {Key: []byte("k"), Value: []byte(v)}})
	}
	r, err := p.AppendLeader(within(t, 10*time.Second), one("a"))
	if err != nil || r != (replication.ApplyResult{BaseOffset: 0, LastOffset: 1}) {
		t.Fatalf("acks=leader with a healthy quorum: %+v, %v", r, err)
	}
	c.WaitConverged(group, 30*time.Second)

	// Cut the leader off: its own log still takes the batch.
	c.Net.Isolate(leader.ID, c.IDs()...)
	hw := p.Log().HighWatermark()
	start := time.Now()
	r, err = p.AppendLeader(within(t, 10*time.Second), one("b"))
	if err != nil {
		t.Fatalf("acks=leader on an isolated leader: %v", err)
	}
	if r.BaseOffset != hw || time.Since(start) > 5*time.Second {
		t.Fatalf("acks=leader: %+v after %v, want base offset %d at once", r, time.Since(start), hw)
	}
	if p.Log().HighWatermark() != hw {
		t.Fatal("an uncommitted batch is readable")
	}
	// acks=all cannot commit: a short deadline ends the wait, outcome
	// unknown; a long one sees the leadership lost.
	if _, err := p.Append(within(t, 200*time.Millisecond), one("c")); !errors.Is(err, replication.ErrOutcomeUnknown) {
		t.Fatalf("acks=all on an isolated leader with a 200ms deadline: %v, want ErrOutcomeUnknown", err)
	}
	if _, err := p.Append(within(t, 20*time.Second), one("d")); !errors.Is(err, replication.ErrNotLeader) {
		t.Fatalf("acks=all on an isolated leader: %v, want ErrNotLeader", err)
	}
}

// The collector exports each replica's Raft state with its topic and
// partition.
func TestRaftMetrics(t *testing.T) {
	groups := []string{replication.PartitionGroup("orders", 0), replication.PartitionGroup("orders", 1)}
	c := clustertest.New(t, clustertest.Options{Groups: groups})
	for _, g := range groups {
		c.Leader(g)
		// Every replica has stored the leader's first entries (a leader
		// can exist before its followers have a log: load made this flaky).
		c.WaitConverged(g, 10*time.Second)
	}
	for _, n := range c.Nodes() {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(replication.NewCollector(n.Replication()))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				if strings.HasSuffix(mf.GetName(), "_total") {
					// The node's sleep and wake counts: none here.
					if len(labels) != 0 || m.GetCounter().GetValue() != 0 {
						t.Fatalf("%s: labels %v, value %v", mf.GetName(), labels, m.GetCounter().GetValue())
					}
					got[mf.GetName()] = 0
					continue
				}
				if mf.GetName() == "logd_raft_awake_replicas" {
					// Both groups' replicas here are awake.
					if len(labels) != 0 || m.GetGauge().GetValue() != float64(len(groups)) {
						t.Fatalf("%s: labels %v, value %v, want %d", mf.GetName(), labels, m.GetGauge().GetValue(), len(groups))
					}
					got[mf.GetName()] = m.GetGauge().GetValue()
					continue
				}
				if labels["topic"] != "orders" {
					t.Fatalf("%s: labels %v", mf.GetName(), labels)
				}
				got[mf.GetName()+"/"+labels["partition"]] = m.GetGauge().GetValue()
			}
		}
		if _, ok := got["logd_raft_sleeps_total"]; !ok {
			t.Fatalf("%s: no logd_raft_sleeps_total in %v", n.ID, got)
		}
		for i, g := range groups {
			p := n.Replica(g)
			leader := 0.0
			if p.Raft().State() == raft.Leader {
				leader = 1
			}
			part := strconv.Itoa(i)
			if got["logd_raft_leader/"+part] != leader || got["logd_raft_term/"+part] < 1 || got["logd_raft_last_index/"+part] < 1 {
				t.Fatalf("%s %s: metrics %v", n.ID, g, got)
			}
		}
	}
}

package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/logd/logd/replication/meta"
)

// Status reports every member, whether it answered, and each partition's
// leader, replicas and state as its leader sees them; a node this one
// cannot reach is reported not alive. Each partition leader measures its
// followers' lag (logd_raft_follower_lag_entries), -1 for one that does
// not answer.
func TestStatusAndLag(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("s", 2, 3))
	h.waitLocal(cfg)
	ctx := context.Background()
	leaders := []*testNode{h.partitionLeader("s", 0), h.partitionLeader("s", 1)}
	set := h.metaLeader().cl().State().Topics["s"].Replicas

	st := h.node("n1").cl().Status(ctx, self("n1"))
	if st.Self != "n1" || len(st.Nodes) != 3 || len(st.Partitions) != 2 {
		t.Fatalf("status: %+v", st)
	}
	for i, n := range st.Nodes {
		if want := fmt.Sprintf("n%d", i+1); n.ID != want || !n.Alive || n.APIAddr != apiAddr(want) || n.RaftAddr != h.node(want).addr {
			t.Errorf("status node %d: %+v, want %s alive at its addresses", i, n, want)
		}
	}
	for i, p := range st.Partitions {
		l := leaders[i]
		if p.Topic != "s" || p.Partition != int32(i) || p.Leader != l.id || !slices.Equal(p.Replicas, set[i]) ||
			p.RaftState != "Leader on "+l.id || p.Term == 0 {
			t.Errorf("status of s/%d: %+v, want led by %s on %v", i, p, l.id, set[i])
		}
	}
	local := h.node("n2").cl().LocalStatus(meta.Node{APIAddr: "x"})
	if local.Self != "n2" || len(local.Nodes) != 1 || local.Nodes[0].RaftAddr != h.node("n2").addr || len(local.Partitions) != 2 {
		t.Errorf("n2's local status: %+v", local)
	}

	l := leaders[0]
	var cut, kept string
	for _, id := range set[0] {
		if id != l.id {
			if cut == "" {
				cut = id
			} else {
				kept = id
			}
		}
	}
	lag := func() map[string]float64 { return followerLag(t, l, "s", "0") }
	h.eventually("the leader of s/0 measures both followers", func() (bool, string) {
		m := lag()
		return len(m) == 2 && m[cut] >= 0 && m[kept] >= 0, fmt.Sprint(m)
	})
	h.partition(l.id, cut)
	h.eventually(cut+", cut off from the leader, lags -1 and is not alive in its status", func() (bool, string) {
		m := lag()
		return m[cut] == -1 && m[kept] >= 0, fmt.Sprint(m)
	})
	for _, n := range l.cl().Status(ctx, self(l.id)).Nodes {
		if n.Alive != (n.ID != cut) {
			t.Errorf("%s's status after the cut: %s alive %v", l.id, n.ID, n.Alive)
		}
	}
}

// followerLag is node nd's logd_raft_follower_lag_entries of a partition,
// by follower.
func followerLag(t *testing.T, nd *testNode, topic, partition string) map[string]float64 {
	t.Helper()
	nd.mu.Lock()
	reg := nd.reg
	nd.mu.Unlock()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "logd_raft_follower_lag_entries" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == topic && labels["partition"] == partition {
				out[labels["follower"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// sleepingTopic creates topic name of n partitions on the single node c,
// each a group born asleep (hibernation is on), and returns its partitions.
func sleepingTopic(t *testing.T, c *Cluster, topics *partition.Topics, name string, n int32) []*partition.Partition {
	t.Helper()
	ctx := context.Background()
	cfg := partition.DefaultConfig(name)
	cfg.Partitions, cfg.Replicas, cfg.CreatedMs = n, 1, time.Now().UnixMilli()
	sets := make([][]string, n)
	for i := range sets {
		sets[i] = []string{"n1"}
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpCreateTopic, Topic: &meta.Topic{Config: cfg, Replicas: sets, Initial: sets}}); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	_, ps, err := topics.Partitions(name)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if r, _, _ := c.localReplica(p); r == nil || !r.Asleep() {
			t.Fatalf("partition %d: no sleeping replica after the create", i)
		}
	}
	return ps
}

// useWakes makes a use of p through Replica, which must answer that the
// partition has no leader yet (it slept), and reports whether p's replica
// is awake after it; the answer says which (Woke or Deferred).
func useWakes(t *testing.T, c *Cluster, p *partition.Partition) bool {
	t.Helper()
	_, err := c.Replica(context.Background(), p)
	nl := (*NotLeaderError)(nil)
	if !errors.As(err, &nl) || nl.Leader.ID != "" {
		t.Fatalf("use of sleeping partition %d: %v, want a NotLeaderError naming no leader (retry)", p.ID, err)
	}
	r, _, _ := c.localReplica(p)
	if awake := !r.Asleep(); nl.Woke != awake || nl.Deferred == awake {
		t.Fatalf("use of sleeping partition %d: awake %v, but the answer says woke %v, deferred %v", p.ID, awake, nl.Woke, nl.Deferred)
	}
	return !r.Asleep()
}

// A node wakes at most Config.WakeRate sleeping groups a second for uses
// (a burst over 10,000 sleeping partitions woke all of them at once and
// the nodes fell into an election storm): a use beyond the budget is
// answered as one that woke its group, retry, and leaves it asleep.
func TestWakesArePaced(t *testing.T) {
	c, topics := singleNode(t, &writeGatedFS{t: t}, func(cfg *Config) { cfg.WakeRate = 1e-6 }) // one, then none for days
	ps := sleepingTopic(t, c, topics, "paced", 3)
	if !useWakes(t, c, ps[0]) {
		t.Fatal("the first use did not wake its partition")
	}
	for _, p := range ps[1:] {
		if useWakes(t, c, p) {
			t.Errorf("partition %d woke beyond the node's wake budget", p.ID)
		}
	}
}

// A negative WakeRate does not bound the wakes.
func TestWakesUnbounded(t *testing.T) {
	c, topics := singleNode(t, &writeGatedFS{t: t}, func(cfg *Config) { cfg.WakeRate = -1 })
	for _, p := range sleepingTopic(t, c, topics, "unpaced", 5) {
		if !useWakes(t, c, p) {
			t.Errorf("partition %d: a use did not wake it", p.ID)
		}
	}
}

// A use wakes a sleeping group only while fewer than Config.MaxAwake of the
// node's replicas are awake, counting the wakes it admitted just before
// (the node counts its awake replicas only every awakeCountEvery).
func TestWakesBoundedByMaxAwake(t *testing.T) {
	c, topics := singleNode(t, &writeGatedFS{t: t}, func(cfg *Config) { cfg.MaxAwake = 2 })
	ps := sleepingTopic(t, c, topics, "bounded", 4)
	for i, p := range ps {
		if woke, want := useWakes(t, c, p), i < 2; woke != want {
			t.Errorf("partition %d: woke %v with %d of at most 2 awake before it, want %v", i, woke, i, want)
		}
	}
	r, _, _ := c.localReplica(ps[0])
	if err := r.Sleep(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * awakeCountEvery) // the next count sees one awake
	if !useWakes(t, c, ps[2]) {
		t.Error("a use did not wake its partition once a replica fell asleep, below the bound")
	}
}

func TestSameVoters(t *testing.T) {
	v := func(ids ...string) []raft.Server {
		var s []raft.Server
		for _, id := range ids {
			s = append(s, raft.Server{ID: raft.ServerID(id), Suffrage: raft.Voter})
		}
		return s
	}
	learner := raft.Server{ID: "n4", Suffrage: raft.Nonvoter}
	for _, tc := range []struct {
		name    string
		servers []raft.Server
		set     []string
		want    bool
	}{
		{"same order", v("n1", "n2", "n3"), []string{"n1", "n2", "n3"}, true},
		{"another order", v("n3", "n1", "n2"), []string{"n1", "n2", "n3"}, true},
		{"a nonvoter beside them", append(v("n1", "n2", "n3"), learner), []string{"n1", "n2", "n3"}, true},
		{"the nonvoter in the set", append(v("n1", "n2"), learner), []string{"n1", "n2", "n4"}, false},
		{"one voter missing", v("n1", "n2"), []string{"n1", "n2", "n3"}, false},
		{"one voter more", v("n1", "n2", "n3", "n4"), []string{"n1", "n2", "n3"}, false},
		{"one voter replaced", v("n1", "n2", "n4"), []string{"n1", "n2", "n3"}, false},
		{"no configuration", nil, []string{"n1"}, false},
	} {
		if got := sameVoters(tc.servers, tc.set); got != tc.want {
			t.Errorf("%s: sameVoters(%v, %v) = %v, want %v", tc.name, tc.servers, tc.set, got, tc.want)
		}
	}
}

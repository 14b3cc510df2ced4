package raftrpc

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// kvFSM records the commands it applies.
type kvFSM struct {
	mu  sync.Mutex
	log [][]byte
}

func (f *kvFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, l.Data)
	return nil
}

func (f *kvFSM) applied() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.log)
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &kvSnap{n: len(f.log)}, nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	var n int
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		return err
	}
	f.mu.Lock()
	f.log = make([][]byte, n)
	f.mu.Unlock()
	return nil
}

type kvSnap struct{ n int }

func (s *kvSnap) Persist(sink raft.SnapshotSink) error {
	_, err := fmt.Fprint(sink, s.n)
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}
func (s *kvSnap) Release() {}

type replica struct {
	raft  *raft.Raft
	fsm   *kvFSM
	trans *Transport
}

func startReplica(t *testing.T, n *node, group string, id raft.ServerID, tune func(*raft.Config)) *replica {
	t.Helper()
	tr := n.group(t, group)
	rc := raft.DefaultConfig()
	rc.LocalID = id
	// Raft's defaults and a lease as long as the follower timeout (as
	// partitions have it): with a 250 ms lease, leaders under -race on a
	// loaded CI machine stepped down while committing.
	rc.HeartbeatTimeout = time.Second
	rc.ElectionTimeout = time.Second
	rc.LeaderLeaseTimeout = time.Second
	rc.CommitTimeout = 20 * time.Millisecond
	rc.Logger = testLogger
	if tune != nil {
		tune(rc)
	}
	fsm := &kvFSM{}
	store := raft.NewInmemStore()
	r, err := raft.NewRaft(rc, fsm, store, store, raft.NewInmemSnapshotStore(), tr)
	if err != nil {
		t.Fatal(err)
	}
	tr.Bind(r)
	t.Cleanup(func() { r.Shutdown().Error() })
	return &replica{raft: r, fsm: fsm, trans: tr}
}

// Three nodes run several groups over one link per node pair: each group
// elects a leader, replicates through the pipeline, and elects another
// after its leader stops.
func TestRaftGroupsOverSharedLinks(t *testing.T) {
	nodes := []*node{newNode(t, Config{}), newNode(t, Config{}), newNode(t, Config{})}
	const groups = 4
	var servers []raft.Server
	for i, n := range nodes {
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint("n", i)), Address: n.addr()})
	}
	reps := make([][]*replica, groups)
	for g := range groups {
		for i, n := range nodes {
			reps[g] = append(reps[g], startReplica(t, n, fmt.Sprint("p/t/", g), servers[i].ID, nil))
		}
		if err := reps[g][0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	const entries = 200
	for g := range groups {
		leader := waitLeader(t, reps[g])
		var last raft.ApplyFuture
		for i := range entries {
			last = leader.raft.Apply([]byte(fmt.Sprint(g, "/", i)), 10*time.Second)
		}
		if err := last.Error(); err != nil {
			t.Fatalf("group %d: %v", g, err)
		}
	}
	for g := range groups {
		for i, r := range reps[g] {
			waitFor(t, fmt.Sprintf("group %d replica %d applies every entry", g, i), func() bool { return r.fsm.applied() == entries })
			r.fsm.mu.Lock()
			for j, d := range r.fsm.log {
				if !bytes.Equal(d, []byte(fmt.Sprint(g, "/", j))) {
					t.Fatalf("group %d replica %d entry %d: %q", g, i, j, d)
				}
			}
			r.fsm.mu.Unlock()
		}
	}
	// Group 0 fails over.
	old := waitLeader(t, reps[0])
	if err := old.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	var rest []*replica
	for _, r := range reps[0] {
		if r != old {
			rest = append(rest, r)
		}
	}
	leader := waitLeader(t, rest)
	if err := leader.raft.Apply([]byte("after"), 10*time.Second).Error(); err != nil {
		t.Fatalf("apply after the failover: %v", err)
	}
}

// A follower that fell behind the leader's snapshot gets it by
// InstallSnapshot over the group's own stream.
func TestInstallSnapshot(t *testing.T) {
	n0, n1 := newNode(t, Config{}), newNode(t, Config{})
	tune := func(rc *raft.Config) { rc.TrailingLogs = 5; rc.SnapshotThreshold = 1 << 30 }
	leader := startReplica(t, n0, "p/t/0", "n0", tune)
	if err := leader.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n0", Address: n0.addr()}}}).Error(); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, []*replica{leader})
	for i := range 50 {
		if err := leader.raft.Apply([]byte(fmt.Sprint(i)), 10*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	follower := startReplica(t, n1, "p/t/0", "n1", tune)
	if err := leader.raft.AddVoter("n1", n1.addr(), 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower restores the snapshot", func() bool { return follower.fsm.applied() >= 50 })
}

func waitLeader(t *testing.T, reps []*replica) *replica {
	t.Helper()
	var leader *replica
	waitFor(t, "a leader", func() bool {
		for _, r := range reps {
			if r.raft.State() == raft.Leader {
				leader = r
				return true
			}
		}
		return false
	})
	return leader
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The heartbeat fast path is taken only by a follower of a term at least
// the heartbeat's (issue 18; replication.NetworkTransport's rule).
func TestHeartbeatFastPathOnlyForAFollowersTerm(t *testing.T) {
	n := newNode(t, Config{})
	r := startReplica(t, n, "p/t/0", "n0", nil)
	if r.raft.State() != raft.Follower || r.raft.CurrentTerm() != 0 {
		t.Fatalf("new replica: %v in term %d", r.raft.State(), r.raft.CurrentTerm())
	}
	if !r.trans.fastPathSafe(heartbeat(0)) {
		t.Error("a follower's heartbeat of its own term kept off the fast path")
	}
	if r.trans.fastPathSafe(heartbeat(1)) {
		t.Error("a follower's heartbeat of a newer term on the fast path")
	}
	if err := r.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n0", Address: n.addr()}}}).Error(); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, []*replica{r})
	term := r.raft.CurrentTerm()
	for _, hb := range []uint64{term - 1, term, term + 1} {
		if r.trans.fastPathSafe(heartbeat(hb)) {
			t.Errorf("a leader of term %d takes a heartbeat of term %d on the fast path", term, hb)
		}
	}
}

package cluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// A cluster is one node's bootstrap and the others' joins through it:
// every node ends up a registered member and a voter of the metadata
// group, with the cluster id the first node made stored in its data
// directory, and every node names the same metadata leader.
func TestBootstrapAndJoin(t *testing.T) {
	h := newHarness(t, 3, nil)
	id := h.node("n1").cl().ClusterID()
	if id == "" {
		t.Fatal("the bootstrapped node has no cluster id")
	}
	for _, nd := range h.all() {
		c := nd.cl()
		if got := c.ClusterID(); got != id {
			t.Errorf("%s: cluster id %q, want n1's %q", nd.id, got, id)
		}
		b, err := os.ReadFile(filepath.Join(nd.dir, ClusterIDFile))
		if err != nil || strings.TrimSpace(string(b)) != id {
			t.Errorf("%s: stored cluster id %q (%v), want %q", nd.id, b, err, id)
		}
		if err := c.Refused(); err != nil {
			t.Errorf("%s refused: %v", nd.id, err)
		}
		if got := len(c.Members()); got != 3 {
			t.Errorf("%s lists %d members, want 3", nd.id, got)
		}
		if c.Self() != nd.id || c.RaftAddr() != nd.addr {
			t.Errorf("%s: Self %q RaftAddr %q, want %q %q", nd.id, c.Self(), c.RaftAddr(), nd.id, nd.addr)
		}
	}
	leader := h.metaLeader()
	if l := h.node("n2").cl().MetaLeader(); l.ID != leader.id || l.APIAddr != apiAddr(leader.id) || l.RaftAddr != leader.addr {
		t.Errorf("n2 names the metadata leader %+v, want %s at %s", l, leader.id, leader.addr)
	}
}

// A node restarted with its data rejoins (its addresses are checked, not
// added again) and keeps its id; a node without cluster state, neither
// bootstrapping nor joining, does not start.
func TestRestartRejoins(t *testing.T) {
	h := newHarness(t, 3, nil)
	n3 := h.node("n3")
	id := n3.cl().ClusterID()
	if err := n3.stop(); err != nil {
		t.Fatal(err)
	}
	if err := n3.start(); err != nil {
		t.Fatal(err)
	}
	if got := n3.cl().ClusterID(); got != id {
		t.Fatalf("restarted n3: cluster id %q, want %q", got, id)
	}
	h.waitMembers()
	if err := n3.cl().Refused(); err != nil {
		t.Fatalf("restarted n3 refused: %v", err)
	}

	dir := t.TempDir()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Start(Config{NodeID: "x", RaftAddr: "127.0.0.1:0"}, Options{DataDir: dir, DB: db, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "no cluster state") {
		t.Fatalf("a node with neither --bootstrap nor --join started: %v", err)
	}
}

// Join is the metadata leader's: a follower answers *NotLeaderError naming
// the leader, untouched; a join without all of a node's addresses is
// refused as invalid, and one whose Raft address is another node's is
// refused without any change.
func TestJoinChecks(t *testing.T) {
	h := newHarness(t, 3, nil)
	leader := h.metaLeader()
	var follower *testNode
	for _, nd := range h.all() {
		if nd != leader {
			follower = nd
		}
	}
	ctx := context.Background()
	n4 := meta.Node{ID: "n4", APIAddr: apiAddr("n4"), RaftAddr: "127.0.0.1:1"}
	var nl *NotLeaderError
	err := follower.cl().Join(ctx, n4, false)
	if !errors.As(err, &nl) || !nl.Untouched || nl.Leader.ID != leader.id || nl.Leader.APIAddr != apiAddr(leader.id) {
		t.Fatalf("join on follower %s: %v, want NotLeaderError naming %s", follower.id, err, leader.id)
	}
	if err := leader.cl().Join(ctx, meta.Node{ID: "n4", RaftAddr: "127.0.0.1:1"}, false); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("join without an API address: %v, want ErrInvalidArgument", err)
	}
	// n4 claims follower's Raft address: the call back there answers as
	// follower.
	n4.RaftAddr = follower.addr
	if err := leader.cl().Join(ctx, n4, false); !errors.Is(err, kind.ErrFailedPrecondition) {
		t.Fatalf("join at another node's Raft address: %v, want ErrFailedPrecondition", err)
	}
	if _, ok := leader.cl().Members()["n4"]; ok {
		t.Fatal("a refused join listed the node")
	}
	if v, err := leader.cl().IsVoter("n4"); err != nil || v {
		t.Fatalf("a refused join made the node a voter (%v, %v)", v, err)
	}
}

// A node whose data directory belongs to another cluster, restarted with
// --join pointing at this one, does not start (it would serve its own
// cluster's topics to this one's clients), and this cluster does not
// change.
func TestOtherClusterRefusedAtStart(t *testing.T) {
	h := newHarness(t, 3, nil)
	stranger := h.addVia("") // bootstraps a cluster of its own
	h.eventually("the stranger leads its own cluster", func() (bool, string) {
		_, ok := stranger.cl().Members()[stranger.id]
		return ok && stranger.cl().IsMetaLeader(), ""
	})
	if a, b := stranger.cl().ClusterID(), h.node("n1").cl().ClusterID(); a == b || a == "" {
		t.Fatalf("two bootstraps made cluster ids %q and %q", a, b)
	}
	if err := stranger.stop(); err != nil {
		t.Fatal(err)
	}
	stranger.join = apiAddr("n1")
	err := stranger.start()
	if err == nil || !errors.Is(err, errOther) || !errors.Is(err, kind.ErrFailedPrecondition) {
		t.Fatalf("a node of another cluster started with --join into this one: %v", err)
	}
	for _, nd := range h.all()[:3] {
		if got := len(nd.cl().Members()); got != 3 {
			t.Errorf("%s lists %d members after the stranger's try, want 3", nd.id, got)
		}
	}
}

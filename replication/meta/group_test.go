package meta

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication"
)

// openGroup starts a node with its metadata group on 127.0.0.1, with rc as
// the node's Raft configuration, stopped at the test's end.
func openGroup(t *testing.T, id string, rc *raft.Config) (*Group, raft.ServerAddress) {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(filepath.Join(dir, "db"), &pebble.Options{Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := replication.NewNode(replication.NodeConfig{ID: raft.ServerID(id), Listener: ln, DataDir: dir, DB: db, Raft: rc,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Off})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		n.Close()
		db.Close()
	})
	return g, raft.ServerAddress(n.Addr())
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
	}
}

// startGroups starts a metadata group of three nodes, n1 leading, whose
// leader sends a commit notice once an hour (Raft's CommitTimeout): a
// follower learns a commit only from the appends of later entries.
func startGroups(t *testing.T) ([]*Group, []raft.ServerAddress) {
	t.Helper()
	rc := raft.DefaultConfig()
	rc.CommitTimeout = time.Hour
	ids := []string{"n1", "n2", "n3"}
	groups := make([]*Group, len(ids))
	addrs := make([]raft.ServerAddress, len(ids))
	for i, id := range ids {
		groups[i], addrs[i] = openGroup(t, id, rc)
	}
	if err := groups[0].Bootstrap("n1", addrs[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "n1 never led", groups[0].IsLeader)
	for i := 1; i < len(ids); i++ {
		if err := groups[0].AddVoter(raft.ServerID(ids[i]), addrs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return groups, addrs
}

// waitApplied waits until every group applied the registration of id.
func waitApplied(t *testing.T, groups []*Group, id string) {
	t.Helper()
	for _, g := range groups {
		waitFor(t, 10*time.Second, "a replica never applied the registration of "+id, func() bool {
			_, ok := g.FSM.Node(id)
			return ok
		})
	}
}

// TestFollowersApplyACommandAtOnce: a command committed on the leader is
// applied by every follower without waiting for the next commit notice:
// the leader's publishing barrier carries the commit index. Without it
// the followers never apply the last command within the test.
func TestFollowersApplyACommandAtOnce(t *testing.T) {
	groups, addrs := startGroups(t)
	for i, id := range []string{"n1", "n2", "n3"} {
		node := Node{ID: id, APIAddr: "127.0.0.1:1", RaftAddr: string(addrs[i])}
		if err := groups[0].Apply(context.Background(), Command{Op: OpAddNode, Node: &node}); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, groups, id)
	}
}

// TestFollowersApplyWhatANewLeaderCommits: an entry the old leader
// committed but did not publish (its followers hold it, not knowing it
// committed) is applied by every replica once a new leader takes over:
// the new leader's first barrier commits after its no-op, and the append
// of its second carries that commit.
func TestFollowersApplyWhatANewLeaderCommits(t *testing.T) {
	groups, addrs := startGroups(t)
	b, err := json.Marshal(Command{Op: OpAddNode, TimeMs: 1, Node: &Node{ID: "x", APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	// Raft's own Apply, which does not publish.
	if err := groups[0].raft.Apply(b, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if _, ok := groups[2].FSM.Node("x"); ok {
		t.Fatal("n3 applied an unpublished command: the test no longer shows anything")
	}
	if err := groups[0].raft.LeadershipTransferToServer("n2", addrs[1]).Error(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, groups, "x")
}

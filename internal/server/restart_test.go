package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logd/logd/internal/node/nodetest"
)

// TestClusterRestartKeepsLocalReplica: a restarted node's metadata state
// is its snapshot's (none here) until its log replays, so the topic is
// missing from it for a while; the node must keep its replica (its log
// and its Raft term and vote), not delete it as a deleted topic's. Torture
// found every restarted node wiping its replicas and rejoining empty with
// no vote, which lost acknowledged records and shifted offsets.
func TestClusterRestartKeepsLocalReplica(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	produceLoad(t, cs, c.Addrs(), 7, 50)
	n := c.Nodes()[2]
	marker := filepath.Join(n.Dir, "partitions", "t-0", "marker")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	n.Restart()
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the restarted node replaced its replica's directory: %v", err)
	}
}

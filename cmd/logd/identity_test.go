package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
)

// A real node bootstrapped alone (a topic of its own), stopped and started
// again on its data directory with --join to a running cluster: it is
// refused and stays out. The process keeps running, logs at ERROR "this
// node is not a member of the cluster: it stays out" with a reason naming
// both clusters and --data-dir, answers /readyz with 503 and that reason,
// and the cluster still has its two nodes.
func TestBinForeignDataDirRefused(t *testing.T) {
	raft := func() string {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	common := []string{"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}
	n1 := startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n1", "--raft-addr", raft(), "--bootstrap")...)
	startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n2", "--raft-addr", raft(), "--join", n1.addr)...)
	c, err := client.Dial(n1.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Admin().ClusterStatus(ctx)
		if err != nil {
			return -1
		}
		return len(st.Nodes)
	}
	eventually(t, 60*time.Second, "two nodes", func() bool { return nodes() == 2 })

	dir, raft9 := t.TempDir(), raft()
	n9 := startBin(t, nil, append(common, "--data-dir", dir, "--node-id", "n9", "--raft-addr", raft9, "--bootstrap")...)
	c9, err := client.Dial(n9.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c9.Admin().CreateTopic(ctx, "foreign", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	c9.Close()
	n9.signal(syscall.SIGTERM)

	// Pointed at another cluster, the node does not start: it would serve
	// its own cluster's topics to the clients of the one it was pointed at.
	r := runBin(t, nil, "", append([]string{"serve"}, append(common, "--data-dir", dir, "--node-id", "n9", "--raft-addr", raft9, "--join", n1.addr)...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "belongs to cluster") || !strings.Contains(r.stderr, "--data-dir") ||
		strings.Contains(r.stderr, "logd serving") {
		t.Fatalf("logd serve on another cluster's data directory: exit %d\n%s", r.code, r.stderr)
	}
	if n := nodes(); n != 2 {
		t.Fatalf("the cluster lists %d nodes, want 2", n)
	}
}

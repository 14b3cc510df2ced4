package main

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

func TestWriteHealth(t *testing.T) {
	nodes := []client.NodeStatus{{ID: "n1", Alive: true}, {ID: "n2", Alive: true}, {ID: "n3", Alive: false}}
	for _, c := range []struct {
		name string
		cs   client.ClusterStatus
		want string
		sick bool
	}{
		{"healthy", client.ClusterStatus{Nodes: nodes[:2], Partitions: []client.PartitionStatus{{Topic: "t", Partition: 0, Leader: "n1", Replicas: []string{"n1", "n2"}}}},
			"healthy: 2 nodes up, 1 partition,", false},
		{"node down", client.ClusterStatus{Nodes: nodes, Partitions: []client.PartitionStatus{
			{Topic: "t", Partition: 0, Leader: "n1", Replicas: []string{"n1", "n2"}},
			{Topic: "t", Partition: 1, Leader: "n2", Replicas: []string{"n2", "n3"}},
			{Topic: "t", Partition: 2, Leader: "", Replicas: []string{"n1", "n2"}},
		}}, "unhealthy: nodes down (1): n3; leaderless partitions (1): t/2; under-replicated partitions (1): t/1", true},
	} {
		var out bytes.Buffer
		err := writeHealth(&out, c.cs)
		if !strings.HasPrefix(out.String(), c.want) || strings.Count(out.String(), "\n") != 1 || errors.Is(err, errUnhealthy) != c.sick {
			t.Errorf("%s: %q, %v; want %q and unhealthy %v", c.name, out.String(), err, c.want, c.sick)
		}
	}
}

// cluster health of a single healthy node: one line, exit 0.
func TestCLIClusterHealth(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	if out := c.ok("", "cluster", "health"); !strings.HasPrefix(out, "healthy: 1 node up, 2 partitions") || strings.Count(out, "\n") != 1 {
		t.Fatalf("cluster health: %q", out)
	}
}

// cluster health of a 3-node cluster with one node killed: unhealthy, the
// node named, exit 1.
func TestBinClusterHealthNodeDown(t *testing.T) {
	nodes := startCluster(t)
	okBin(t, nil, "", "topic", "create", "t", "--partitions", "2", "--replicas", "3", "--server", nodes[0].addr)
	if out := okBin(t, nil, "", "cluster", "health", "--server", nodes[0].addr); !strings.HasPrefix(out, "healthy: 3 nodes up, 2 partitions") {
		t.Fatalf("cluster health: %q", out)
	}
	nodes[2].signal(syscall.SIGKILL)
	var r binResult
	eventually(t, 60*time.Second, "cluster health sees n3 down", func() bool {
		r = runBin(t, nil, "", "cluster", "health", "--server", nodes[0].addr)
		return r.code == 1 && strings.Contains(r.stdout, "nodes down (1): n3")
	})
	if !strings.HasPrefix(r.stdout, "unhealthy: ") || !strings.Contains(r.stdout, "under-replicated partitions (2): t/0 t/1") {
		t.Fatalf("cluster health with n3 down: %q", r.stdout)
	}
}

package logdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// Cluster is several logd nodes that form one cluster.
type Cluster struct {
	dir   string
	nodes []*Node
}

// NewCluster starts n nodes (1 to 9) that form a cluster: the first
// bootstraps it, the others join it. It returns once every node is a
// member, so a topic created then is placed on all of them (3 replicas by
// default, or n if fewer). Close stops them and removes their directories.
func NewCluster(n int, opts Options) (*Cluster, error) {
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("logdtest: a cluster of %d nodes: give 1 to 9", n)
	}
	dir, err := os.MkdirTemp("", "logdtest-cluster-")
	if err != nil {
		return nil, fmt.Errorf("logdtest: %w", err)
	}
	c := &Cluster{dir: dir}
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		cc := &node.ClusterConfig{NodeID: id, Bootstrap: i == 0, Raft: nodetest.RaftConfig()}
		if i > 0 {
			cc.Join = c.nodes[0].Addr()
		}
		nd, err := newNode(filepath.Join(dir, id), id, opts, cc)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, nd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !waitFor(ctx, func() bool { return c.members() >= n }) {
		c.Close()
		return nil, fmt.Errorf("logdtest: the %d nodes did not form a cluster within a minute", n)
	}
	return c, nil
}

// StartCluster is NewCluster for a test: the nodes are closed when the
// test ends, and a cluster that does not form fails the test.
func StartCluster(t testing.TB, n int, opts ...Options) *Cluster {
	t.Helper()
	c, err := NewCluster(n, first(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Nodes are the cluster's nodes, n1 first.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Addrs is every node's gRPC API address, comma-separated: client.Dial
// takes it as is, and a client follows the cluster through any node that
// runs.
func (c *Cluster) Addrs() string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.Addr())
	}
	return strings.Join(a, ",")
}

// Client dials the cluster (every node as a seed) and closes the client
// when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	return dial(t, c.Addrs(), opts)
}

// Close stops every node and removes their directories.
func (c *Cluster) Close() error {
	errs := make([]error, len(c.nodes))
	done := make(chan int)
	for i, n := range c.nodes {
		go func() { errs[i] = n.Stop(); done <- i }()
	}
	for range c.nodes {
		<-done
	}
	return errors.Join(append(errs, os.RemoveAll(c.dir))...)
}

// members is how many members the first running node lists.
func (c *Cluster) members() int {
	for _, n := range c.nodes {
		n.mu.Lock()
		s := n.srv
		n.mu.Unlock()
		if s != nil {
			return len(s.ClusterMembers())
		}
	}
	return 0
}

// waitFor reports whether cond holds before ctx ends, checking every
// 20 ms.
func waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

package nodetest

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/replication/faultnet"
)

// Cluster is N in-process logd nodes in cluster mode on 127.0.0.1: each
// with its own data directory, API port and Raft port, their Raft links
// through a faultnet.Network (Net) so a test can cut and slow them. A
// stopped node restarts from its directory on the same addresses.
type Cluster struct {
	t      testing.TB
	Net    *faultnet.Network
	mut    []func(*node.Config)
	mu     sync.Mutex
	nodes  []*Node
	others []*Node // outsiders (Outsider): on Net, not members
}

// Node is one member.
type Node struct {
	ID       string
	Dir      string
	APIAddr  string
	RaftAddr string
	// Join is the API address the node joins through when it starts
	// without bootstrapping; "": the first node's.
	Join string
	c    *Cluster
	srv  *node.Node
}

// NewCluster starts n nodes: the first bootstraps the cluster, the others
// join it. It waits until every node is listed, and stops them all when the
// test ends. mutate adjusts each node's config.
func NewCluster(t testing.TB, n int, mutate ...func(*node.Config)) *Cluster {
	t.Helper()
	// The directory first: cleanups run last registered first, so the
	// nodes stop before their directories are removed (a node still
	// writing made RemoveAll fail with "directory not empty").
	dir := t.TempDir()
	c := &Cluster{t: t, Net: faultnet.New(), mut: mutate}
	t.Cleanup(c.Close)
	for i := range n {
		nd := &Node{ID: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), c: c}
		c.nodes = append(c.nodes, nd)
		// A port freeport found free may be taken by another test process
		// before the node listens on it: then the node tries other ports,
		// on a fresh directory.
		var err error
		for try := 0; try == 0 || (try < 3 && addrInUse(err)); try++ {
			if try > 0 { // a fresh directory: the failed start may have written to the first
				nd.Dir = filepath.Join(dir, fmt.Sprintf("n%d-%d", i+1, try))
			}
			for _, a := range []*string{&nd.APIAddr, &nd.RaftAddr} {
				if *a, err = freeport.Addr(); err != nil {
					t.Fatal(err)
				}
			}
			err = nd.start(i == 0)
		}
		if err != nil {
			t.Fatalf("nodetest: start %s: %v", nd.ID, err)
		}
	}
	c.WaitMembers(n, 30*time.Second)
	return c
}

// RaftConfig is the Raft configuration of the test clusters: timeouts generous
// enough for a loaded 2-core CI machine.
func RaftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 1500 * time.Millisecond
	rc.ElectionTimeout = 1500 * time.Millisecond
	rc.LeaderLeaseTimeout = 1000 * time.Millisecond
	return rc
}

func (n *Node) start(bootstrap bool) error {
	ln, err := n.c.Net.Listen(n.ID, n.RaftAddr)
	if err != nil {
		return err
	}
	cfg := node.Config{Config: broker.Config{DataDir: n.Dir, Cluster: &node.ClusterConfig{
		NodeID: n.ID, RaftListener: ln, Bootstrap: bootstrap, RaftDial: n.c.Net.Dialer(n.ID), Raft: RaftConfig(),
	}}, Addr: n.APIAddr}
	if !bootstrap {
		cfg.Cluster.Join = n.Join
		if n.Join == "" {
			cfg.Cluster.Join = n.c.nodes[0].APIAddr
		}
	}
	for _, m := range n.c.mut {
		m(&cfg)
	}
	s, err := node.Start(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	n.c.mu.Lock()
	n.srv = s
	n.c.mu.Unlock()
	return nil
}

// AddNode starts one more node, which joins through the first node.
func (c *Cluster) AddNode() *Node {
	c.t.Helper()
	nd := &Node{ID: fmt.Sprintf("n%d", len(c.nodes)+1), Dir: filepath.Join(filepath.Dir(c.nodes[0].Dir), fmt.Sprintf("n%d", len(c.nodes)+1)), c: c}
	for _, a := range []*string{&nd.APIAddr, &nd.RaftAddr} {
		var err error
		if *a, err = freeport.Addr(); err != nil {
			c.t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	if err := nd.start(false); err != nil {
		c.t.Fatalf("nodetest: start %s: %v", nd.ID, err)
	}
	return nd
}

// Outsider starts a node that bootstraps a cluster of its own, on c's
// network but not a member of c (not in Nodes): a node whose data
// directory belongs to another cluster. Stopped at Close.
func (c *Cluster) Outsider(id string) *Node {
	c.t.Helper()
	nd := &Node{ID: id, Dir: filepath.Join(filepath.Dir(c.nodes[0].Dir), id), c: c}
	for _, a := range []*string{&nd.APIAddr, &nd.RaftAddr} {
		var err error
		if *a, err = freeport.Addr(); err != nil {
			c.t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.others = append(c.others, nd)
	c.mu.Unlock()
	if err := nd.start(true); err != nil {
		c.t.Fatalf("nodetest: start %s: %v", nd.ID, err)
	}
	return nd
}

// Nodes are the members, in order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Addrs are every node's API address, for a client's seeds.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.APIAddr)
	}
	return out
}

// Server is the running node (package node), nil while stopped.
func (n *Node) Server() *node.Node {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.srv
}

// Stop stops the node (gracefully: Raft and logs closed in order; what was
// acknowledged is on disk, as after kill -9 with fsync always).
func (n *Node) Stop() {
	n.c.mu.Lock()
	s := n.srv
	n.srv = nil
	n.c.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Restart starts a stopped node from its directory.
func (n *Node) Restart() {
	n.c.t.Helper()
	if err := n.TryRestart(); err != nil {
		n.c.t.Fatalf("nodetest: restart %s: %v", n.ID, err)
	}
}

// TryRestart is Restart for a node that may refuse to start: its error.
func (n *Node) TryRestart() error { return n.start(false) }

// WaitMembers waits until the first running node lists want members.
func (c *Cluster) WaitMembers(want int, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range c.Nodes() {
			if s := n.Server(); s != nil {
				if len(s.ClusterMembers()) >= want {
					return
				}
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("nodetest: fewer than %d members after %v", want, timeout)
}

// Close stops every node.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	c.mu.Lock()
	all := append(slices.Clone(c.nodes), c.others...)
	c.mu.Unlock()
	for _, n := range all {
		wg.Add(1)
		go func() { defer wg.Done(); n.Stop() }()
	}
	wg.Wait()
}

// addrInUse reports whether err is a listen on an address already taken.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || (err != nil && strings.Contains(err.Error(), "address already in use"))
}

package torture

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/log"
)

// InProcessConfig configures an InProcessCluster.
type InProcessConfig struct {
	Nodes int    // default 3
	Dir   string // node-N/ data directories and node-N.log
	// Server tweaks a node's configuration before each start. Optional.
	Server func(i int, cfg *node.Config)
	// LoseUnsynced makes a kill lose what the node's logs had written and
	// not fsynced (a power cut) rather than keep it (kill -9).
	LoseUnsynced bool
	// StopTimeout bounds how long a killed node may take to stop (default
	// 30s): longer is an error (a stuck shutdown).
	StopTimeout time.Duration
}

// InProcessCluster runs logd nodes as servers inside the test process,
// each on its own data directory, FaultFS and 127.0.0.1 ports. Clients
// reach a node through a Proxy, nodes reach each other through a RaftMesh,
// so the nemeses act as they do on processes, with these differences:
//
//   - Kill cannot stop goroutines at once: it fails every later write and
//     fsync of the node's logs (FaultFS.Crash), stops the server (Close),
//     and with LoseUnsynced cuts the logs back to what was fsynced.
//     Pebble (metadata, offsets, Raft's stable store) is closed in order.
//   - Pause cannot freeze goroutines: the node's clients' connections and
//     Raft links hold every byte (blackhole) until Resume, so its peers and
//     clients see what they see of a SIGSTOPped node, while its own timers
//     run on (it may step down, where a frozen leader would not).
//   - FillDisk and SlowDisk act on the logs' FaultFS, not on a file system.
type InProcessCluster struct {
	cfg   InProcessConfig
	nodes []*inprocNode
	mesh  *RaftMesh
}

type inprocNode struct {
	id       int
	addr     string // API address, kept across restarts
	raftAddr string
	dir      string
	logPath  string
	proxy    *Proxy // clients' way in
	fs       *FaultFS

	mu     sync.Mutex
	srv    *node.Node
	logf   *os.File
	paused bool
}

// StartInProcessCluster starts cfg.Nodes servers and waits until each
// serves. Close it.
func StartInProcessCluster(cfg InProcessConfig) (*InProcessCluster, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 30 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	c := &InProcessCluster{cfg: cfg}
	raftAddrs := make([]string, cfg.Nodes)
	for i := range cfg.Nodes {
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		if raftAddrs[i], err = freePort(); err != nil {
			return nil, err
		}
		n := &inprocNode{id: i, addr: addr, raftAddr: raftAddrs[i], fs: NewFaultFS(),
			dir:     filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)),
			logPath: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d.log", i))}
		if n.proxy, err = NewProxy(addr); err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	var err error
	if c.mesh, err = NewRaftMesh(raftAddrs); err != nil {
		c.Close()
		return nil, err
	}
	for _, n := range c.nodes {
		if err := c.start(n); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// start starts node n's server.
func (c *InProcessCluster) start(n *inprocNode) error {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("torture: node %d log: %w", n.id, err)
	}
	cfg := node.Config{
		Config: broker.Config{
			DataDir: n.dir,
			Fsync:   log.FsyncPolicy{Mode: log.FsyncAlways},
			LogFS:   n.fs,
			Logger:  slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo})),
		},
		Addr: n.addr,
	}
	if err := c.clusterConfig(n, &cfg); err != nil {
		logf.Close()
		return err
	}
	if c.cfg.Server != nil {
		c.cfg.Server(n.id, &cfg)
	}
	srv, err := node.Start(cfg)
	if err != nil {
		logf.Close()
		return fmt.Errorf("torture: start node %d: %w (see %s)", n.id, err, n.logPath)
	}
	n.mu.Lock()
	n.srv, n.logf = srv, logf
	n.mu.Unlock()
	n.proxy.SetCut(false)
	if c.mesh != nil {
		c.mesh.SetDown(n.id, false)
	}
	return nil
}

func (c *InProcessCluster) Size() int { return len(c.nodes) }

// Addr is where clients reach node: its proxy.
func (c *InProcessCluster) Addr(node int) string { return c.nodes[node].proxy.Addr() }

// NodeAddr is node's own API address.
func (c *InProcessCluster) NodeAddr(node int) string { return c.nodes[node].addr }

// LogPath is where node's log goes.
func (c *InProcessCluster) LogPath(node int) string { return c.nodes[node].logPath }

// FS is node's log file system.
func (c *InProcessCluster) FS(node int) *FaultFS { return c.nodes[node].fs }

// Mesh is the proxies between the nodes' Raft ports.
func (c *InProcessCluster) Mesh() *RaftMesh { return c.mesh }

// Running reports whether node's server runs (it is stopped only by Kill).
func (c *InProcessCluster) Running(node int) bool {
	n := c.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv != nil
}

// Kill crashes node (see InProcessCluster).
func (c *InProcessCluster) Kill(node int) error {
	n := c.nodes[node]
	n.mu.Lock()
	srv, logf, paused := n.srv, n.logf, n.paused
	n.srv, n.logf, n.paused = nil, nil, false
	n.mu.Unlock()
	if srv == nil {
		return fmt.Errorf("torture: kill node %d: not running", node)
	}
	// As a dead process's, its clients' connections and Raft links are
	// reset and new ones refused until it restarts.
	n.proxy.Cut()
	c.mesh.SetDown(node, true)
	n.fs.Crash()
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	var stuck error
	select {
	case <-done: // an error closing on a dead disk is expected
	case <-time.After(c.cfg.StopTimeout):
		stuck = fmt.Errorf("torture: kill node %d: its server did not stop within %s (goroutines in %s)",
			node, c.cfg.StopTimeout, c.dumpGoroutines(node))
	}
	if paused { // its links and clients' connections held bytes: now gone
		c.mesh.Thaw(node)
		n.proxy.SetBlackhole(false)
	}
	var lost error
	if c.cfg.LoseUnsynced {
		if _, err := n.fs.LoseUnsynced(); err != nil {
			lost = fmt.Errorf("torture: kill node %d: %w", node, err)
		}
	} else {
		n.fs.Recover()
	}
	logf.Close()
	return errors.Join(stuck, lost)
}

// dumpGoroutines writes every goroutine's stack next to node's log, for a
// server that does not stop, and returns the file's path.
func (c *InProcessCluster) dumpGoroutines(node int) string {
	path := c.nodes[node].logPath + ".stuck-goroutines"
	f, err := os.Create(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := pprof.Lookup("goroutine").WriteTo(f, 2); err != nil {
		return err.Error()
	}
	return path
}

// Restart starts a killed node again on its data.
func (c *InProcessCluster) Restart(node int) error {
	if c.Running(node) {
		return fmt.Errorf("torture: restart node %d: still running", node)
	}
	return c.start(c.nodes[node])
}

// Pause holds every byte to and from node (see InProcessCluster).
func (c *InProcessCluster) Pause(node int) error { return c.setPaused(node, true) }

// Resume delivers what Pause held.
func (c *InProcessCluster) Resume(node int) error { return c.setPaused(node, false) }

func (c *InProcessCluster) setPaused(node int, on bool) error {
	n := c.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv == nil {
		return fmt.Errorf("torture: pause node %d: not running", node)
	}
	n.paused = on
	if on {
		c.mesh.Freeze(node)
	} else {
		c.mesh.Thaw(node)
	}
	n.proxy.SetBlackhole(on)
	return nil
}

// Partition cuts the links s names (see RaftMesh.Partition).
func (c *InProcessCluster) Partition(s Split, blackhole bool) { c.mesh.Partition(s, blackhole) }

// HealPartition restores every link between nodes.
func (c *InProcessCluster) HealPartition() { c.mesh.HealPartition() }

// FillDisk makes every write of node's logs that needs space fail with
// ENOSPC.
func (c *InProcessCluster) FillDisk(node int) error { c.nodes[node].fs.SetFull(true); return nil }

// FreeDisk ends FillDisk.
func (c *InProcessCluster) FreeDisk(node int) error { c.nodes[node].fs.SetFull(false); return nil }

// SlowDisk delays every fsync of node's logs by d.
func (c *InProcessCluster) SlowDisk(node int, d time.Duration) error {
	c.nodes[node].fs.SetSyncDelay(d)
	return nil
}

// Close stops every server, proxy and link.
func (c *InProcessCluster) Close() error {
	var errs []error
	if c.mesh != nil {
		c.mesh.Heal()
	}
	for _, n := range c.nodes {
		n.proxy.Heal()
		n.fs.SetFull(false)
		n.fs.SetSyncDelay(0)
		n.mu.Lock()
		srv, logf := n.srv, n.logf
		n.srv, n.logf = nil, nil
		n.mu.Unlock()
		if srv != nil {
			errs = append(errs, srv.Close())
			logf.Close()
		}
		n.proxy.Close()
	}
	if c.mesh != nil {
		errs = append(errs, c.mesh.Close())
	}
	return errors.Join(errs...)
}

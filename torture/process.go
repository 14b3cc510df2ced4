package torture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/logd/logd/internal/freeport"
)

// ProcessConfig configures a ProcessCluster.
type ProcessConfig struct {
	// Binary is the logd executable (see BuildLogd).
	Binary string
	// Nodes is the number of processes (default 1). Each is a standalone
	// `logd serve`; cluster flags come from Args.
	Nodes int
	// Dir holds node-N/ data directories and node-N.log (stderr).
	Dir string
	// Args returns extra `logd serve` arguments of a node (--fsync ...,
	// or ClusterArgs). It may use the addresses of c's nodes: every node's
	// API and Raft address is chosen before the first one starts. Optional.
	Args func(node int, c *ProcessCluster) []string
	// ServeArgs are added to every node's `logd serve`, last, so that one
	// of the harness's own flags given here again takes this value (the
	// tests take TORTURE_SERVE_ARGS, split on spaces). Optional.
	ServeArgs []string
	// StartTimeout bounds how long a node may take to serve (default 30s).
	StartTimeout time.Duration
	// DiskBytes, when set, gives each node a data directory on its own
	// tmpfs of that size (mounted by the cluster, so it needs root), which
	// FillDisk fills and FreeDisk frees: the disk-full nemesis.
	DiskBytes int64
	// Proxy puts a TCP proxy (see Proxy) in front of each node: Addr is the
	// proxy's address, and the network nemeses cut, blackhole or slow the
	// clients' connections.
	Proxy bool
	// NoKafka starts the nodes without their Kafka listener (by default
	// each node serves the Kafka protocol on a port of its own, behind a
	// proxy of its own with Proxy, which it advertises: see KafkaAddr).
	NoKafka bool
	// RaftMesh puts a proxy on every link between two nodes' Raft ports
	// (see RaftMesh; each node learns its routes from LOGD_RAFT_ROUTES),
	// through which the partition nemeses cut links. For cluster mode
	// (ClusterArgs).
	RaftMesh bool
}

// ProcessCluster runs logd nodes as child processes on 127.0.0.1. It stops
// only the processes it started, by PID.
type ProcessCluster struct {
	cfg   ProcessConfig
	nodes []*procNode
	mesh  *RaftMesh // nil without ProcessConfig.RaftMesh
}

type procNode struct {
	id       int
	addr     string
	raftAddr string // chosen for cluster mode (see ClusterArgs)
	// httpAddr is the node's --http-addr, where the run scrapes /metrics
	// (see CounterScraper).
	httpAddr string
	proxy    *Proxy // nil without ProcessConfig.Proxy
	// kafkaAddr is the node's Kafka listener ("" with NoKafka); with
	// Proxy, kafkaProxy forwards to it and is what the node advertises.
	kafkaAddr  string
	kafkaProxy *Proxy
	dataDir    string
	logPath    string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// exitCode is the last process's exit status (-1: killed by a signal).
	exitCode int
	paused   bool
	mounted  bool
}

var servingLine = regexp.MustCompile(`logd serving"? addr=(\S+)`)

// errPortTaken: a node could not bind a port freePort had found free;
// another process took it in between.
var errPortTaken = errors.New("torture: a port picked as free was taken before the node bound it")

// StartProcessCluster starts cfg.Nodes processes and waits until each serves.
// Ports are picked free and then bound by the nodes, so another process can
// take one in between (parallel soaks do): then the nodes start again, from
// empty data directories, on new ports.
func StartProcessCluster(cfg ProcessConfig) (*ProcessCluster, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 1
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	for attempt := 1; ; attempt++ {
		c, err := startProcessCluster(cfg)
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			return c, err
		}
		for i := range cfg.Nodes {
			os.RemoveAll(filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)))
		}
	}
}

func startProcessCluster(cfg ProcessConfig) (*ProcessCluster, error) {
	c := &ProcessCluster{cfg: cfg}
	for i := range cfg.Nodes {
		addr, err := freePort()
		if err != nil {
			c.Close()
			return nil, err
		}
		raftAddr, err := freePort()
		if err != nil {
			c.Close()
			return nil, err
		}
		httpAddr, err := freePort()
		if err != nil {
			c.Close()
			return nil, err
		}
		n := &procNode{id: i, addr: addr, raftAddr: raftAddr, httpAddr: httpAddr,
			dataDir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)),
			logPath: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d.log", i))}
		if err := c.addKafka(n); err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	if cfg.RaftMesh {
		addrs := make([]string, len(c.nodes))
		for i, n := range c.nodes {
			addrs[i] = n.raftAddr
		}
		var err error
		if c.mesh, err = NewRaftMesh(addrs); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		var err error
		if cfg.DiskBytes > 0 {
			if err := mountTmpfs(n.dataDir, cfg.DiskBytes); err != nil {
				c.Close()
				return nil, err
			}
			n.mounted = true
		}
		if err := c.start(n); err != nil {
			c.Close()
			return nil, err
		}
		if cfg.Proxy {
			if n.proxy, err = NewProxy(n.addr); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

// addKafka picks n's Kafka port and, with Proxy, starts the proxy in
// front of it before the node starts: the node advertises the proxy's
// address, so Kafka clients, which connect where Metadata tells them,
// stay behind the proxy the network nemeses fault.
func (c *ProcessCluster) addKafka(n *procNode) error {
	if c.cfg.NoKafka {
		return nil
	}
	var err error
	if n.kafkaAddr, err = freePort(); err != nil {
		return err
	}
	if c.cfg.Proxy {
		n.kafkaProxy, err = NewProxy(n.kafkaAddr)
	}
	return err
}

// KafkaAddr is where Kafka clients reach node: its Kafka proxy when there
// is one (the address the node advertises), "" with NoKafka.
func (c *ProcessCluster) KafkaAddr(node int) string {
	if p := c.nodes[node].kafkaProxy; p != nil {
		return p.Addr()
	}
	return c.nodes[node].kafkaAddr
}

// KafkaProxy is the proxy in front of node's Kafka listener, nil without
// Proxy or with NoKafka. The network nemeses fault it with Proxy(node).
func (c *ProcessCluster) KafkaProxy(node int) *Proxy { return c.nodes[node].kafkaProxy }

// freePort returns a loopback address with a port free now, outside the
// kernel's ephemeral range (see package freeport). Nodes keep their port
// across restarts so clients can reconnect.
func freePort() (string, error) {
	return freeport.Addr()
}

func (c *ProcessCluster) Size() int { return len(c.nodes) }

// Addr is where clients reach node: its proxy when there is one.
func (c *ProcessCluster) Addr(node int) string {
	if p := c.nodes[node].proxy; p != nil {
		return p.Addr()
	}
	return c.nodes[node].addr
}

// RaftAddr is the Raft address chosen for node (see ClusterArgs).
func (c *ProcessCluster) RaftAddr(node int) string { return c.nodes[node].raftAddr }

// ClusterArgs are the `logd serve` cluster flags of node (README.md, A
// cluster): ids from 1, the chosen Raft address, node 0 bootstraps and the
// others join it (both are no-ops when a node restarts on its data). Use
// it as ProcessConfig.Args, with RaftMesh for partitions.
func ClusterArgs(node int, c *ProcessCluster) []string {
	args := []string{"--node-id", fmt.Sprint(node + 1), "--raft-addr", c.RaftAddr(node)}
	if node == 0 {
		return append(args, "--bootstrap")
	}
	return append(args, "--join", c.NodeAddr(0))
}

// ServeArgs are the flags added to every node's `logd serve`
// (ProcessConfig.ServeArgs); the report names them.
func (c *ProcessCluster) ServeArgs() []string { return c.cfg.ServeArgs }

// MetricsURL is node's /metrics on its --http-addr (a port chosen like
// its API's, kept across restarts). A --http-addr in ServeArgs overrides
// the harness's, and then this URL answers nothing.
func (c *ProcessCluster) MetricsURL(node int) string {
	return "http://" + c.nodes[node].httpAddr + "/metrics"
}

// NodeAddr is node's own API address, behind its proxy if any.
func (c *ProcessCluster) NodeAddr(node int) string { return c.nodes[node].addr }

// Proxy is node's proxy, nil without ProcessConfig.Proxy.
func (c *ProcessCluster) Proxy(node int) *Proxy { return c.nodes[node].proxy }

// DataDir is node's --data-dir.
func (c *ProcessCluster) DataDir(node int) string { return c.nodes[node].dataDir }

// LogPath is where node's stderr goes.
func (c *ProcessCluster) LogPath(node int) string { return c.nodes[node].logPath }

// PID is node's process id, 0 when it is not running.
func (c *ProcessCluster) PID(node int) int {
	n := c.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// start runs node n on its data directory and waits for its "logd
// serving" line.
func (c *ProcessCluster) start(n *procNode) error {
	serving, exited, scanned, err := c.launch(n, n.dataDir, nil)
	if err != nil {
		return err
	}
	select {
	case <-serving:
		return nil
	case <-exited:
		<-scanned
		if b, err := os.ReadFile(n.logPath); err == nil && bytes.Contains(b, []byte("address already in use")) {
			return fmt.Errorf("%w: node %d (see %s)", errPortTaken, n.id, n.logPath)
		}
		return fmt.Errorf("torture: node %d exited before serving (see %s)", n.id, n.logPath)
	case <-time.After(c.cfg.StartTimeout):
		n.mu.Lock()
		cmd := n.cmd
		n.mu.Unlock()
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("torture: node %d did not serve within %s (see %s)", n.id, c.cfg.StartTimeout, n.logPath)
	}
}

// serveArgs are node n's `logd serve` arguments on dataDir; override, when
// set, replaces the cluster arguments of ProcessConfig.Args.
func (c *ProcessCluster) serveArgs(n *procNode, dataDir string, override []string) []string {
	args := []string{"serve", "--data-dir", dataDir, "--addr", n.addr, "--http-addr", n.httpAddr, "--kafka-addr", n.kafkaAddr}
	if n.kafkaProxy != nil {
		args = append(args, "--kafka-advertised-addr", n.kafkaProxy.Addr())
	}
	switch {
	case override != nil:
		args = append(args, override...)
	case c.cfg.Args != nil:
		args = append(args, c.cfg.Args(n.id, c)...)
	}
	return append(args, c.cfg.ServeArgs...)
}

// launch starts node n's process on dataDir; serving is closed at its
// "logd serving" line, exited when it exits, scanned once its log holds
// everything it wrote.
func (c *ProcessCluster) launch(n *procNode, dataDir string, override []string) (serving, exited, scanned chan struct{}, err error) {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("torture: node %d log: %w", n.id, err)
	}
	cmd := exec.Command(c.cfg.Binary, c.serveArgs(n, dataDir, override)...)
	if c.mesh != nil {
		cmd.Env = append(os.Environ(), "LOGD_RAFT_ROUTES="+c.mesh.Routes(n.id))
	}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, nil, fmt.Errorf("torture: start node %d: %w", n.id, err)
	}
	exited = make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.mu.Unlock()
	go func() {
		cmd.Wait()
		n.mu.Lock()
		n.exitCode = cmd.ProcessState.ExitCode()
		n.mu.Unlock()
		pw.Close()
		close(exited)
	}()
	serving, scanned = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		defer logf.Close()
		once := sync.Once{}
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logf.Write(append(sc.Bytes(), '\n'))
			if servingLine.Match(sc.Bytes()) {
				once.Do(func() { close(serving) })
			}
		}
		io.Copy(io.Discard, pr)
	}()
	return serving, exited, scanned, nil
}

func (n *procNode) running() (*exec.Cmd, chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, nil, false
	}
	select {
	case <-n.exited:
		return nil, nil, false
	default:
		return n.cmd, n.exited, true
	}
}

// ExitCode is the exit status of node's last process once it has exited
// (-1 when a signal ended it or it runs).
func (c *ProcessCluster) ExitCode(node int) int {
	n := c.nodes[node]
	if _, _, ok := n.running(); ok {
		return -1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitCode
}

// Kill sends SIGKILL to node and waits for it to exit.
func (c *ProcessCluster) Kill(node int) error {
	n := c.nodes[node]
	cmd, exited, ok := n.running()
	if !ok {
		return fmt.Errorf("torture: kill node %d: not running", node)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("torture: kill node %d: %w", node, err)
	}
	<-exited
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

// Restart starts a node that is not running.
func (c *ProcessCluster) Restart(node int) error {
	n := c.nodes[node]
	if _, _, ok := n.running(); ok {
		return fmt.Errorf("torture: restart node %d: still running", node)
	}
	return c.start(n)
}

// Pause sends SIGSTOP.
func (c *ProcessCluster) Pause(node int) error { return c.signal(node, syscall.SIGSTOP, true) }

// Resume sends SIGCONT.
func (c *ProcessCluster) Resume(node int) error { return c.signal(node, syscall.SIGCONT, false) }

func (c *ProcessCluster) signal(node int, sig syscall.Signal, paused bool) error {
	n := c.nodes[node]
	cmd, _, ok := n.running()
	if !ok {
		return fmt.Errorf("torture: %s node %d: not running", sig, node)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("torture: %s node %d: %w", sig, node, err)
	}
	n.mu.Lock()
	n.paused = paused
	n.mu.Unlock()
	return nil
}

// Running reports whether node's process is alive (a node can exit on its
// own, on a fatal error).
func (c *ProcessCluster) Running(node int) bool {
	_, _, ok := c.nodes[node].running()
	return ok
}

// Mesh is the proxies between the nodes' Raft ports, nil without
// ProcessConfig.RaftMesh.
func (c *ProcessCluster) Mesh() *RaftMesh { return c.mesh }

// Partition cuts the links s names (see RaftMesh.Partition). It needs
// ProcessConfig.RaftMesh.
func (c *ProcessCluster) Partition(s Split, blackhole bool) {
	if c.mesh != nil {
		c.mesh.Partition(s, blackhole)
	}
}

// HealPartition restores every link between nodes.
func (c *ProcessCluster) HealPartition() {
	if c.mesh != nil {
		c.mesh.HealPartition()
	}
}

// Close resumes and kills every node still running, waits for each to
// exit, and unmounts the data directories it mounted.
func (c *ProcessCluster) Close() error {
	var errs []error
	if c.mesh != nil {
		defer c.mesh.Close()
	}
	for _, n := range c.nodes {
		if n.kafkaProxy != nil {
			n.kafkaProxy.Close()
		}
		if n.proxy != nil {
			n.proxy.Close()
		}
		cmd, exited, ok := n.running()
		if ok {
			cmd.Process.Signal(syscall.SIGCONT)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				errs = append(errs, fmt.Errorf("torture: stop node %d (pid %d): %w", n.id, cmd.Process.Pid, err))
				continue
			}
			<-exited
		}
		if n.mounted {
			if err := syscall.Unmount(n.dataDir, 0); err != nil {
				errs = append(errs, fmt.Errorf("torture: unmount %s: %w", n.dataDir, err))
			} else {
				n.mounted = false
			}
		}
	}
	return errors.Join(errs...)
}

// SaveData copies each node's data directory that lives on a tmpfs (see
// ProcessConfig.DiskBytes) to node-N.data beside it, so that the logs of a
// failed run outlive Close, which unmounts them.
func (c *ProcessCluster) SaveData() error {
	var errs []error
	for _, n := range c.nodes {
		if !n.mounted {
			continue
		}
		if out, err := exec.Command("cp", "-a", n.dataDir, n.dataDir+".data").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("torture: save %s: %v: %s", n.dataDir, err, out))
		}
	}
	return errors.Join(errs...)
}

// mountTmpfs mounts a tmpfs of size bytes on dir.
func mountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		return fmt.Errorf("torture: mount a %d-byte tmpfs on %s (needs root): %w", size, dir, err)
	}
	return nil
}

// fillerName is the file FillDisk grows until the disk is full.
const fillerName = "torture-filler"

// FillDisk fills node's data disk (ProcessConfig.DiskBytes) with a file
// until writes fail with ENOSPC.
func (c *ProcessCluster) FillDisk(node int) error {
	n := c.nodes[node]
	if !n.mounted {
		return fmt.Errorf("torture: fill disk of node %d: no disk of its own (set ProcessConfig.DiskBytes)", node)
	}
	f, err := os.OpenFile(filepath.Join(n.dataDir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("torture: fill disk of node %d: %w", node, err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					break
				}
				return fmt.Errorf("torture: fill disk of node %d: %w", node, err)
			}
		}
	}
	return nil
}

// FreeDisk removes what FillDisk wrote.
func (c *ProcessCluster) FreeDisk(node int) error {
	err := os.Remove(filepath.Join(c.nodes[node].dataDir, fillerName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("torture: free disk of node %d: %w", node, err)
	}
	return nil
}

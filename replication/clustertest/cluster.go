// Package clustertest runs logd replication clusters inside one test
// process: N nodes on 127.0.0.1, each with its own directory (Pebble DB,
// partition logs, snapshots), its own transport.Mux on one port, and links
// through a faultnet.Network, so a test can cut, delay, kill and restart.
//
// Every node holds a replica of every group of Options.Groups; the groups
// are bootstrapped with all nodes as voters. A killed node is shut down in
// order (Raft, transport, logs, DB: what was acknowledged is on disk, as
// after kill -9 with fsync always) and restarts from its directory on the
// same address.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/faultnet"
)

// Options configure a Cluster.
type Options struct {
	Nodes  int      // 0: 3
	Groups []string // 0: {"p/test/0"}
	// Raft tweaks each group's Raft config (after the harness's defaults:
	// timeouts generous enough for a loaded CI machine).
	Raft func(*raft.Config)
	// Log tweaks each partition log's options (ManualHighWatermark is
	// forced on).
	Log func(*log.Options)
	// LogLevel of Raft and the transport; "": warn.
	LogLevel string
}

// Cluster is a set of in-process nodes.
type Cluster struct {
	t      testing.TB
	opts   Options
	dir    string
	Net    *faultnet.Network
	logger hclog.Logger

	mu    sync.Mutex
	nodes []*Node
}

// Node is one in-process logd node.
type Node struct {
	ID   string
	Addr string // Raft address, kept across restarts
	c    *Cluster
	dir  string

	mu   sync.Mutex
	up   bool
	db   *pebble.DB
	rn   *replication.Node
	logs []*log.Log
}

// New starts a cluster and waits until every group has a leader. It is
// closed at the end of the test.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if len(opts.Groups) == 0 {
		opts.Groups = []string{"p/test/0"}
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	logs := &logBuffer{}
	c := &Cluster{
		t:      t,
		opts:   opts,
		dir:    t.TempDir(),
		Net:    faultnet.New(),
		logger: hclog.New(&hclog.LoggerOptions{Name: "cluster", Level: hclog.LevelFromString(opts.LogLevel), Output: logs}),
	}
	// Cleanups run last first: the nodes stop, then a failed test shows
	// the logs.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs (%s and above):\n%s", opts.LogLevel, logs.String())
		}
	})
	t.Cleanup(c.Close)
	for i := range opts.Nodes {
		n := &Node{ID: fmt.Sprintf("n%d", i+1), c: c}
		n.dir = filepath.Join(c.dir, n.ID)
		c.nodes = append(c.nodes, n)
		if err := n.start(); err != nil {
			t.Fatalf("start %s: %v", n.ID, err)
		}
	}
	servers := make([]raft.Server, len(c.nodes))
	for i, n := range c.nodes {
		servers[i] = raft.Server{ID: raft.ServerID(n.ID), Address: raft.ServerAddress(n.Addr)}
	}
	for _, g := range opts.Groups {
		if err := c.nodes[0].Replica(g).Bootstrap(servers); err != nil {
			t.Fatalf("bootstrap %s: %v", g, err)
		}
		c.Leader(g)
	}
	return c
}

// logBuffer keeps the cluster's logs (the last few MiB), shown only when
// the test fails. Raft goroutines may log after a test ends, so they do
// not write to testing.T.
type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > 8<<20 {
		w.b = append([]byte(nil), w.b[len(w.b)-4<<20:]...)
	}
	return len(p), nil
}

func (w *logBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// AddNode starts a new node holding an empty replica of every group. It is
// in no group's configuration until a leader adds it (Replica.AddVoter).
func (c *Cluster) AddNode() *Node {
	c.t.Helper()
	c.mu.Lock()
	n := &Node{ID: fmt.Sprintf("n%d", len(c.nodes)+1), c: c}
	c.mu.Unlock()
	n.dir = filepath.Join(c.dir, n.ID)
	if err := n.start(); err != nil {
		c.t.Fatalf("start %s: %v", n.ID, err)
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	return n
}

// Nodes returns every node, running or not, in the order they were added.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Node returns the node with id.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	c.t.Fatalf("no node %s", id)
	return nil
}

// Up returns the running nodes.
func (c *Cluster) Up() []*Node {
	var up []*Node
	for _, n := range c.Nodes() {
		if n.Up() {
			up = append(up, n)
		}
	}
	return up
}

// IDs returns every node's id.
func (c *Cluster) IDs() []string {
	nodes := c.Nodes()
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}

// Leader waits (up to 30s) for a leader of group that every running node
// reachable from it agrees on, and returns it.
func (c *Cluster) Leader(group string) *Node {
	c.t.Helper()
	n, err := c.WaitLeader(group, 30*time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// WaitLeader waits for a node that is the leader of group, with no other
// running node claiming to lead in the same or a later term.
func (c *Cluster) WaitLeader(group string, timeout time.Duration) (*Node, error) {
	deadline := time.Now().Add(timeout)
	for {
		var leaders []*Node
		for _, n := range c.Up() {
			if p := n.Replica(group); p != nil && p.Raft().State() == raft.Leader {
				leaders = append(leaders, n)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("clustertest: group %s: %d leaders after %v", group, len(leaders), timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Append appends b through the current leader of group, following leader
// changes until timeout while replicas refuse before appending (b is copied
// for each try). An append whose outcome is unknown (leadership lost
// mid-append) is returned as an error: without the idempotent producer a
// retry could duplicate.
func (c *Cluster) Append(group string, b []byte, timeout time.Duration) (replication.ApplyResult, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := c.WaitLeader(group, time.Until(deadline))
		if err != nil {
			return replication.ApplyResult{}, err
		}
		p := n.Replica(group)
		if p == nil {
			continue // killed meanwhile
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		r, err := p.Append(ctx, append([]byte(nil), b...))
		cancel()
		if err == nil || !errors.Is(err, raft.ErrNotLeader) || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill stops node id (Raft, transport, logs, Pebble).
func (c *Cluster) Kill(id string) {
	c.t.Helper()
	if err := c.Node(id).stop(); err != nil {
		c.t.Fatalf("kill %s: %v", id, err)
	}
}

// Restart starts a killed node again from its directory.
func (c *Cluster) Restart(id string) {
	c.t.Helper()
	if err := c.Node(id).start(); err != nil {
		c.t.Fatalf("restart %s: %v", id, err)
	}
}

// Close stops every node.
func (c *Cluster) Close() {
	for _, n := range c.Nodes() {
		if err := n.stop(); err != nil {
			c.t.Errorf("stop %s: %v", n.ID, err)
		}
	}
}

// WaitConverged waits until every running node holds the same entries of
// group as the leader (same last index) and has applied them (same high
// watermark, same log start), then checks that their committed bytes are identical.
func (c *Cluster) WaitConverged(group string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leader, err := c.WaitLeader(group, time.Until(deadline))
		if err != nil {
			c.t.Fatal(err)
		}
		lp := leader.Replica(group)
		if lp == nil {
			continue
		}
		wantLast, wantHW, wantStart := lp.Log().LastIndex(), lp.Log().HighWatermark(), lp.Log().StartOffset()
		ok := lp.Raft().AppliedIndex() >= wantLast
		for _, n := range c.Up() {
			p := n.Replica(group)
			// The log start too: a DeleteRecords entry moves no high
			// watermark.
			if p == nil || p.Log().LastIndex() != wantLast || p.Log().HighWatermark() != wantHW || p.Log().StartOffset() != wantStart {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			var state []string
			for _, n := range c.Up() {
				if p := n.Replica(group); p != nil {
					state = append(state, fmt.Sprintf("%s: %v last %d hw %d applied %d", n.ID, p.Raft().State(), p.Log().LastIndex(), p.Log().HighWatermark(), p.Raft().AppliedIndex()))
				}
			}
			c.t.Fatalf("group %s did not converge in %v: %v", group, timeout, state)
		}
		time.Sleep(25 * time.Millisecond)
	}
	var want []byte
	var from string
	for _, n := range c.Up() {
		got := n.Committed(group)
		if want == nil {
			want, from = got, n.ID
			continue
		}
		if !slices.Equal(got, want) {
			c.t.Fatalf("group %s: %s's committed bytes (%d) differ from %s's (%d)", group, n.ID, len(got), from, len(want))
		}
	}
}

// Up reports whether the node runs.
func (n *Node) Up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

// Replica returns the node's replica of group, nil when the node is down.
func (n *Node) Replica(group string) *replication.Replica {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rn == nil {
		return nil
	}
	return n.rn.Replica(group)
}

// Replication returns the node's replication.Node, nil when it is down.
func (n *Node) Replication() *replication.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rn
}

// Committed returns the node's committed batches of group, from the log
// start to the high watermark, as stored.
func (n *Node) Committed(group string) []byte {
	p := n.Replica(group)
	if p == nil {
		n.c.t.Fatalf("%s is down", n.ID)
	}
	l := p.Log()
	var out []byte
	off, hw := l.StartOffset(), l.HighWatermark()
	for off < hw {
		b, err := l.Read(off, 1<<20)
		if err != nil {
			n.c.t.Fatalf("%s: read %s at %d: %v", n.ID, group, off, err)
		}
		if len(b) == 0 {
			break
		}
		from := off
		err = batch.Split(b, func(bb []byte, info batch.Info) error {
			if info.BaseOffset >= hw {
				return nil
			}
			if info.BaseOffset > off || info.NextOffset() <= off {
				return fmt.Errorf("batch at offsets [%d, %d) where offset %d was expected", info.BaseOffset, info.NextOffset(), off)
			}
			out = append(out, bb...)
			off = info.NextOffset()
			return nil
		})
		if err == nil && off == from {
			err = fmt.Errorf("read at offset %d (high watermark %d) made no progress", off, hw)
		}
		if err != nil {
			n.c.t.Fatalf("%s: split %s at %d: %v", n.ID, group, off, err)
		}
	}
	return out
}

// Records returns the node's committed records of group, decoded.
func (n *Node) Records(group string) []Record {
	var out []Record
	err := batch.Split(n.Committed(group), func(b []byte, info batch.Info) error {
		_, recs, err := batch.Decode(b, 0)
		for i, r := range recs {
			out = append(out, Record{Offset: info.BaseOffset + int64(i), Key: string(r.Key), Value: string(r.Value)})
		}
		return err
	})
	if err != nil {
		n.c.t.Fatalf("%s: decode %s: %v", n.ID, group, err)
	}
	return out
}

// Record is a committed record as a test sees it.
type Record struct {
	Offset     int64
	Key, Value string
}

func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.up {
		return nil
	}
	c := n.c
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	ln, err := c.Net.Listen(n.ID, n.Addr)
	if err != nil {
		return err
	}
	n.Addr = ln.Addr().String()
	db, err := pebble.Open(filepath.Join(n.dir, "pebble"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		ln.Close()
		return err
	}
	rc := raft.DefaultConfig()
	// Generous for a shared 2-core machine under -race: a missed
	// heartbeat must not start elections all the time.
	rc.HeartbeatTimeout = 1500 * time.Millisecond
	rc.ElectionTimeout = 1500 * time.Millisecond
	rc.LeaderLeaseTimeout = 1000 * time.Millisecond
	rc.CommitTimeout = 20 * time.Millisecond
	if c.opts.Raft != nil {
		c.opts.Raft(rc)
	}
	rn, err := replication.NewNode(replication.NodeConfig{
		ID: raft.ServerID(n.ID), Listener: ln, Dial: c.Net.Dialer(n.ID),
		DataDir: n.dir, DB: db, Raft: rc, Logger: c.logger.Named(n.ID),
	})
	if err != nil {
		ln.Close()
		db.Close()
		return err
	}
	n.rn, n.db, n.logs = rn, db, nil
	n.up = true
	for _, g := range c.opts.Groups {
		if err := n.openGroupLocked(g); err != nil {
			n.stopLocked()
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return nil
}

func (n *Node) openGroupLocked(group string) error {
	lo := log.Options{}
	if n.c.opts.Log != nil {
		n.c.opts.Log(&lo)
	}
	lo.ManualHighWatermark = true
	l, err := log.Open(filepath.Join(n.dir, "logs", strings.ReplaceAll(group, "/", "~")), lo)
	if err != nil {
		return err
	}
	if _, err := n.rn.OpenReplica(group, l, replication.ReplicaOptions{}); err != nil {
		l.Close()
		return err
	}
	n.logs = append(n.logs, l)
	return nil
}

func (n *Node) stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked()
}

// stopLocked stops Raft first, then closes the logs and the DB it wrote.
func (n *Node) stopLocked() error {
	if !n.up {
		return nil
	}
	n.up = false
	errs := []error{n.rn.Close()}
	for _, l := range n.logs {
		errs = append(errs, l.Close())
	}
	errs = append(errs, n.db.Close())
	n.rn, n.logs, n.db = nil, nil, nil
	return errors.Join(errs...)
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

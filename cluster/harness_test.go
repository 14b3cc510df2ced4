package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/faultnet"
	"github.com/logd/logd/replication/meta"
)

// The in-process cluster of this package's tests: N nodes, each a
// Cluster started as the broker starts one (its own data directory,
// Pebble DB and partition.Topics), with its Raft port on 127.0.0.1 behind
// a faultnet.Network, so a test can cut links (the peer service's calls
// ride the same links). The nodes' API addresses are names ("api-n1")
// that only the fake join lookup (testPeers) resolves, to the named
// node's Raft address; it fails when the link between the two nodes is
// cut or the node is down.

// waitFor bounds every wait of these tests: generous, for a shared
// machine under -race; a test that passes waits far less.
const waitFor = 60 * time.Second

// testRaft is the Raft configuration of every group: short enough that
// elections and failovers take a second or two, long enough that a busy
// machine does not start elections all the time.
func raftForTests() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 400 * time.Millisecond
	rc.CommitTimeout = 20 * time.Millisecond
	return rc
}

type harness struct {
	t   *testing.T
	dir string
	net *faultnet.Network
	cfg func(*Config) // each node's Config tweak, nil: none
	log *syncBuffer

	mu    sync.Mutex
	nodes []*testNode
	cut   map[[2]string]bool // links cut (both ids, ordered)
}

// testNode is one node of a harness; c is nil while it is down.
type testNode struct {
	h    *harness
	id   string
	dir  string
	addr string // Raft address, kept across restarts
	join string // the API address it joins through ("": bootstraps)

	mu     sync.Mutex
	c      *Cluster
	db     *pebble.DB
	topics *partition.Topics
	reg    *prometheus.Registry
}

// newHarness starts n nodes: n1 bootstraps the cluster, the others join
// through n1, and it waits until every node is a registered member and a
// voter of the metadata group. At the end of the test every node stops
// and no goroutine of the cluster is left.
func newHarness(t *testing.T, n int, cfg func(*Config)) *harness {
	t.Helper()
	before := goroutineIDs()
	h := &harness{t: t, dir: t.TempDir(), net: faultnet.New(), cfg: cfg, log: &syncBuffer{}, cut: map[[2]string]bool{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", h.log.String())
		}
	})
	t.Cleanup(func() {
		h.stopAll()
		checkNoLeak(t, before)
	})
	for i := range n {
		h.add(i > 0)
	}
	h.waitMembers()
	return h
}

// add starts a new node, joining through n1 (join) or bootstrapping.
func (h *harness) add(join bool) *testNode {
	via := ""
	if join {
		via = "n1"
	}
	return h.addVia(via)
}

// addVia starts a new node that joins through node via ("": bootstraps).
func (h *harness) addVia(via string) *testNode {
	h.t.Helper()
	h.mu.Lock()
	nd := &testNode{h: h, id: fmt.Sprintf("n%d", len(h.nodes)+1)}
	nd.dir = filepath.Join(h.dir, nd.id)
	if via != "" {
		nd.join = apiAddr(via)
	}
	h.nodes = append(h.nodes, nd)
	h.mu.Unlock()
	if err := nd.start(); err != nil {
		h.t.Fatalf("start %s: %v", nd.id, err)
	}
	return nd
}

func apiAddr(id string) string { return "api-" + id }

// self is what node id registers: its (fake) API address.
func self(id string) meta.Node { return meta.Node{ID: id, APIAddr: apiAddr(id)} }

func (nd *testNode) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.c != nil {
		return nil
	}
	if err := os.MkdirAll(nd.dir, 0o755); err != nil {
		return err
	}
	ln, err := nd.h.net.Listen(nd.id, nd.addr)
	if err != nil {
		return err
	}
	nd.addr = ln.Addr().String()
	db, err := pebble.Open(filepath.Join(nd.dir, "meta"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		ln.Close()
		return err
	}
	topics, err := partition.Open(partition.Options{DataDir: nd.dir, DB: db, LogOptions: func(partition.TopicConfig) log.Options {
		return log.Options{ManualHighWatermark: true}
	}})
	if err != nil {
		ln.Close()
		db.Close()
		return err
	}
	cfg := Config{NodeID: nd.id, RaftListener: ln, Bootstrap: nd.join == "", Join: nd.join,
		JoinLookup: testPeers{h: nd.h, from: nd.id}.raftAddr, RaftDial: nd.h.net.Dialer(nd.id), Raft: raftForTests()}
	if nd.h.cfg != nil {
		nd.h.cfg(&cfg)
	}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(nd.h.log, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", nd.id)
	c, err := Start(cfg, Options{DataDir: nd.dir, DB: db, Topics: topics, Logger: logger, Registry: reg})
	if err != nil {
		topics.Close()
		db.Close()
		return err
	}
	c.Run(self(nd.id))
	nd.c, nd.db, nd.topics, nd.reg = c, db, topics, reg
	return nil
}

// stop stops the node as the broker does: the control plane, then the
// topics and the DB it wrote.
func (nd *testNode) stop() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.c == nil {
		return nil
	}
	err := errors.Join(nd.c.Close(), nd.topics.Close(), nd.db.Close())
	nd.c, nd.topics, nd.db = nil, nil, nil
	return err
}

// cl is the node's Cluster; the test fails when the node is down.
func (nd *testNode) cl() *Cluster {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.c == nil {
		nd.h.t.Fatalf("%s is down", nd.id)
	}
	return nd.c
}

// up returns the node's Cluster and Topics, nil when it is down.
func (nd *testNode) up() (*Cluster, *partition.Topics) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.c, nd.topics
}

func (h *harness) node(id string) *testNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, nd := range h.nodes {
		if nd.id == id {
			return nd
		}
	}
	h.t.Fatalf("no node %s", id)
	return nil
}

func (h *harness) all() []*testNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*testNode(nil), h.nodes...)
}

// running are the nodes up.
func (h *harness) running() []*testNode {
	var out []*testNode
	for _, nd := range h.all() {
		if c, _ := nd.up(); c != nil {
			out = append(out, nd)
		}
	}
	return out
}

func (h *harness) stopAll() {
	for _, nd := range h.all() {
		if err := nd.stop(); err != nil {
			h.t.Errorf("stop %s: %v", nd.id, err)
		}
	}
}

// partition cuts the link between nodes a and b, for Raft (faultnet) and
// for Peers calls.
func (h *harness) partition(a, b string) {
	h.mu.Lock()
	h.cut[linkKey(a, b)] = true
	h.mu.Unlock()
	h.net.Partition(a, b)
}

// isolate cuts every link of node id.
func (h *harness) isolate(id string) {
	for _, nd := range h.all() {
		if nd.id != id {
			h.partition(id, nd.id)
		}
	}
}

func (h *harness) heal() {
	h.mu.Lock()
	clear(h.cut)
	h.mu.Unlock()
	h.net.Heal()
}

func (h *harness) isCut(a, b string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cut[linkKey(a, b)]
}

func linkKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// eventually polls cond until it holds, failing the test after waitFor
// with what the last look saw.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not after %v (%s)", what, waitFor, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMembers waits until every running node lists every node as a
// registered member and a voter of the metadata group.
func (h *harness) waitMembers() {
	h.t.Helper()
	h.eventually("every node a registered voter", func() (bool, string) {
		for _, nd := range h.running() {
			c := nd.cl()
			for _, other := range h.all() {
				m, ok := c.Members()[other.id]
				want := self(other.id)
				want.RaftAddr = other.addr
				if !ok || !m.Registered(want) {
					return false, fmt.Sprintf("%s lists %s as %+v", nd.id, other.id, m)
				}
				if v, err := c.IsVoter(other.id); err != nil || !v {
					return false, fmt.Sprintf("%s: %s voter %v (%v)", nd.id, other.id, v, err)
				}
			}
		}
		return true, ""
	})
}

// metaLeader waits for a metadata leader that a majority of the nodes
// (itself among them) name, counting only the nodes not cut off from it,
// and returns it. A leader cut off from the others may still say it
// leads for a moment; it is not returned.
func (h *harness) metaLeader() *testNode {
	h.t.Helper()
	var leader *testNode
	h.eventually("a metadata leader that a majority names", func() (bool, string) {
		leader = nil
		saw := ""
		for _, nd := range h.running() {
			if !nd.cl().IsMetaLeader() {
				continue
			}
			votes := 0
			for _, other := range h.running() {
				if !h.isCut(nd.id, other.id) && other.cl().MetaLeader().ID == nd.id {
					votes++
				}
			}
			if 2*votes > len(h.all()) {
				leader = nd
				return true, ""
			}
			saw += fmt.Sprintf("%s leads, named by %d; ", nd.id, votes)
		}
		return false, saw
	})
	return leader
}

// onMetaLeader runs fn on the metadata leader, again on the new leader
// while fn answers that it does not lead (nothing was done).
func (h *harness) onMetaLeader(fn func(*Cluster) error) error {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		err := fn(h.metaLeader().cl())
		var nl *NotLeaderError
		if !errors.As(err, &nl) || !nl.Untouched || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testPeers is the fake join lookup of node from: it reaches the Cluster
// of the node at the API address directly, unless that node is down or
// the link between the two is cut.
type testPeers struct {
	h    *harness
	from string
}

func (p testPeers) target(addr string) (*Cluster, *partition.Topics, error) {
	id, ok := strings.CutPrefix(addr, "api-")
	if !ok {
		return nil, nil, fmt.Errorf("no node at %q", addr)
	}
	if p.h.isCut(p.from, id) {
		return nil, nil, kind.Errorf(kind.ErrUnavailable, "%s to %s: %v", p.from, id, faultnet.ErrPartitioned)
	}
	for _, nd := range p.h.all() {
		if nd.id == id {
			if c, topics := nd.up(); c != nil {
				return c, topics, nil
			}
		}
	}
	return nil, nil, kind.Errorf(kind.ErrUnavailable, "node %s is down", id)
}

// raftAddr is Config.JoinLookup: the Raft address of the node whose API
// address is addr.
func (p testPeers) raftAddr(_ context.Context, addr string) (string, error) {
	c, _, err := p.target(addr)
	if err != nil {
		return "", err
	}
	return c.RaftAddr(), nil
}

// goroutineIDs are the ids of the goroutines running now.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for _, g := range goroutines() {
		ids[g.id] = true
	}
	return ids
}

type goroutine struct{ id, stack string }

func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := strings.Cut(string(g), " [")
		out = append(out, goroutine{id: strings.TrimPrefix(head, "goroutine "), stack: string(g)})
	}
	return out
}

// checkNoLeak waits until every goroutine of logd, Raft or Pebble started
// since before has ended (the caller's own excepted: the first listed).
func checkNoLeak(t *testing.T, before map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var left []string
		for i, g := range goroutines() {
			if i == 0 || before[g.id] {
				continue
			}
			if strings.Contains(g.stack, "github.com/logd/logd/") || strings.Contains(g.stack, "hashicorp/raft") ||
				strings.Contains(g.stack, "cockroachdb/pebble") {
				left = append(left, g.stack)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after every node stopped:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer keeps the nodes' logs, shown when a test fails. Raft and
// the loops may log after a test ends, so they do not write to testing.T.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 8<<20 {
		w.b.Reset()
	}
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

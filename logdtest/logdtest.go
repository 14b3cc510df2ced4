package logdtest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/node"
)

// Options adjust the nodes. The zero value is what most tests want.
type Options struct {
	// Logger receives the nodes' logs; nil: discarded.
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Node is one running (or stopped) logd node.
type Node struct {
	id, dir, addr, httpAddr string
	start                   func() (*node.Node, error)

	mu  sync.Mutex
	srv *node.Node
}

// ID is the node's id in a cluster ("n1", "n2", ...), "" for a node that
// runs alone.
func (n *Node) ID() string { return n.id }

// Addr is the node's gRPC API address (HOST:PORT), for client.Dial.
func (n *Node) Addr() string { return n.addr }

// HTTPAddr is the node's HTTP address: the HTTP API under /v1/, /metrics,
// /healthz and /readyz.
func (n *Node) HTTPAddr() string { return n.httpAddr }

// Dir is the node's data directory.
func (n *Node) Dir() string { return n.dir }

// Client dials the node and closes the client when the test ends.
func (n *Node) Client(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	return dial(t, n.addr, opts)
}

// Stop stops the node gracefully (what it acknowledged is on disk). A
// stopped node refuses connections until Restart. Stopping a stopped node
// does nothing.
func (n *Node) Stop() error {
	n.mu.Lock()
	s := n.srv
	n.srv = nil
	n.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// Restart starts a stopped node again from its data directory on the same
// addresses (Stop first if it runs).
func (n *Node) Restart() error {
	if err := n.Stop(); err != nil {
		return err
	}
	s, err := n.start()
	if err != nil {
		return fmt.Errorf("logdtest: restart %s: %w", n.name(), err)
	}
	n.mu.Lock()
	n.srv = s
	n.mu.Unlock()
	return nil
}

// Running reports whether the node runs.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv != nil
}

func (n *Node) name() string {
	if n.id == "" {
		return "node " + n.addr
	}
	return "node " + n.id
}

// NewNode starts one node that runs alone, in a new temporary data
// directory. Close stops it and removes the directory.
func NewNode(opts Options) (*Node, error) {
	dir, err := os.MkdirTemp("", "logdtest-")
	if err != nil {
		return nil, fmt.Errorf("logdtest: %w", err)
	}
	n, err := newNode(dir, "", opts, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return n, nil
}

// Start is NewNode for a test: the node is closed when the test ends, and
// a node that does not start fails the test.
func Start(t testing.TB, opts ...Options) *Node {
	t.Helper()
	n, err := NewNode(first(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// Close stops the node and removes its data directory.
func (n *Node) Close() error {
	return errors.Join(n.Stop(), os.RemoveAll(n.dir))
}

// newNode picks the node's addresses and starts it; cc, when set, makes it
// a cluster member (its RaftAddr is filled in here).
func newNode(dir, id string, opts Options, cc *node.ClusterConfig) (*Node, error) {
	n := &Node{id: id, dir: dir}
	for _, a := range []*string{&n.addr, &n.httpAddr} {
		var err error
		if *a, err = freeport.Addr(); err != nil {
			return nil, fmt.Errorf("logdtest: %w", err)
		}
	}
	if cc != nil {
		var err error
		if cc.RaftAddr, err = freeport.Addr(); err != nil {
			return nil, fmt.Errorf("logdtest: %w", err)
		}
	}
	n.start = func() (*node.Node, error) {
		cfg := node.Config{Config: broker.Config{DataDir: dir, Logger: opts.logger()}, Addr: n.addr, HTTPAddr: n.httpAddr}
		if cc != nil {
			c := *cc
			cfg.Cluster = &c
		}
		return node.Start(cfg)
	}
	s, err := n.start()
	if err != nil {
		return nil, fmt.Errorf("logdtest: start %s: %w", n.name(), err)
	}
	n.srv = s
	return n, nil
}

func dial(t testing.TB, addr string, opts []client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(addr, opts...)
	if err != nil {
		t.Fatalf("logdtest: dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func first(opts []Options) Options {
	if len(opts) > 0 {
		return opts[0]
	}
	return Options{}
}

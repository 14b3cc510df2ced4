package raftrpc

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/transport"
)

var testLogger = hclog.New(&hclog.LoggerOptions{Level: hclog.Error})

// node is a Mux and a Hub on 127.0.0.1.
type node struct {
	mux *transport.Mux
	hub *Hub
}

func (n *node) addr() raft.ServerAddress { return raft.ServerAddress(n.mux.Addr().String()) }

func (n *node) close() {
	n.hub.Close()
	n.mux.Close()
}

func newNode(t *testing.T, cfg Config) *node {
	t.Helper()
	return newNodeWith(t, cfg, nil)
}

// newNodeWith is newNode with the Hub's stream layer wrapped by wrap (nil:
// as is). The links are direct connections, as a node has them
// (replication.NewNode).
func newNodeWith(t *testing.T, cfg Config, wrap func(raft.StreamLayer) raft.StreamLayer) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux, err := transport.New(transport.Config{Listener: ln, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	links, err := mux.DirectGroup(ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stream = links
	if wrap != nil {
		cfg.Stream = wrap(links)
	}
	cfg.Logger = testLogger
	hub, err := NewHub(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{mux: mux, hub: hub}
	t.Cleanup(n.close)
	return n
}

// group registers a group on n with its own stream layer for snapshots.
func (n *node) group(t *testing.T, id string) *Transport {
	t.Helper()
	stream, err := n.mux.Group(id)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := n.hub.Group(id, stream)
	if err != nil {
		t.Fatal(err)
	}
	// What copyStream does for a partition: InstallSnapshot connections
	// go to the transport.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := stream.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != SnapshotMagic {
				c.Close()
				continue
			}
			go tr.ServeSnapshot(c)
		}
	}()
	t.Cleanup(func() { tr.Close(); stream.Close(); <-done })
	return tr
}

// answer answers every AppendEntries on tr's Consumer with success in the
// request's term, after delay, until stop is closed.
func answer(tr raft.Transport, delay time.Duration, stop <-chan struct{}) {
	for {
		select {
		case rpc := <-tr.Consumer():
			time.Sleep(delay)
			switch req := rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + uint64(len(req.Entries)), Success: true}, nil)
			default:
				rpc.Respond(nil, errUnexpected)
			}
		case <-stop:
			return
		}
	}
}

var errUnexpected = &RemoteError{Msg: "unexpected rpc"}

var header = raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n1"), Addr: []byte("n1:1")}

func heartbeat(term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: header, Term: term}
}

func appendReq(term, prev uint64, n int) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{RPCHeader: header, Term: term, PrevLogEntry: prev, PrevLogTerm: term, LeaderCommitIndex: prev}
	for i := range n {
		req.Entries = append(req.Entries, &raft.Log{Index: prev + 1 + uint64(i), Term: term, Type: raft.LogCommand, Data: []byte("entry")})
	}
	return req
}

func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s: no outcome in %v", what, d)
		return nil
	}
}

// waitGoroutines waits up to 5 s for the goroutines to be back to before,
// and fails with every goroutine's stack if they are not.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

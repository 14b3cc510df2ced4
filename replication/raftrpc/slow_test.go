package raftrpc

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/logd/logd/replication/transport"
)

// gate pauses the reads of the links a node accepts: a peer that reads
// slowly (starved of CPU), so that its link's yamux window fills and the
// writer's Write waits.
type gate struct {
	mu     sync.Mutex
	opened chan struct{} // closed while reads may go on
}

func newGate() *gate {
	g := &gate{opened: make(chan struct{})}
	close(g.opened)
	return g
}

func (g *gate) pause() {
	g.mu.Lock()
	g.opened = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) resume() {
	g.mu.Lock()
	close(g.opened)
	g.mu.Unlock()
}

func (g *gate) wait(closed <-chan struct{}) {
	g.mu.Lock()
	opened := g.opened
	g.mu.Unlock()
	select {
	case <-opened:
	case <-closed:
	}
}

// gatedLayer hands out accepted links whose reads wait on its gate, and
// counts them.
type gatedLayer struct {
	raft.StreamLayer
	gate     *gate
	accepted atomic.Int32
}

func (l *gatedLayer) Accept() (net.Conn, error) {
	c, err := l.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	return &gatedConn{Conn: c, gate: l.gate, closed: make(chan struct{})}, nil
}

type gatedConn struct {
	net.Conn
	gate   *gate
	once   sync.Once
	closed chan struct{}
}

func (c *gatedConn) Read(p []byte) (int, error) {
	c.gate.wait(c.closed)
	return c.Conn.Read(p)
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// slowPeer is node a (call Timeout 1s) and node b whose link reads wait on
// a gate, each with groups "g" and "big", b answering both until stop.
func slowPeer(t *testing.T, stop <-chan struct{}) (a, b *node, ta, tbig *Transport, g *gate, layer *gatedLayer) {
	t.Helper()
	g = newGate()
	a = newNode(t, Config{Timeout: time.Second})
	b = newNodeWith(t, Config{}, func(s raft.StreamLayer) raft.StreamLayer {
		layer = &gatedLayer{StreamLayer: s, gate: g}
		return layer
	})
	ta, tbig = a.group(t, "g"), a.group(t, "big")
	go answer(b.group(t, "g"), 0, stop)
	go answer(b.group(t, "big"), 0, stop)
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), heartbeat(1), &resp); err != nil || !resp.Success {
		t.Fatalf("heartbeat: %+v, %v", resp, err)
	}
	return a, b, ta, tbig, g, layer
}

// bigAppend is larger than a yamux stream's window
// (transport.StreamWindow): its Write waits for the peer to read.
func bigAppend() *raft.AppendEntriesRequest {
	req := appendReq(1, 1, 1)
	req.Entries[0].Data = make([]byte, transport.StreamWindow+1<<20)
	return req
}

// A peer that reads nothing for longer than the call timeout (a node
// starved of CPU) makes the calls waiting on it time out, each on its own,
// and nothing else: the link stays up and carries the calls made once the
// peer reads again. With a deadline on each link write, the write waiting
// for the peer's window failed the link, and with it every group's calls
// to that peer (at 1,000 partitions and a load of 38, 9,632 link writes
// timed out this way and elections never finished).
func TestSlowPeerDoesNotBreakTheLink(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	a, b, ta, tbig, g, layer := slowPeer(t, stop)
	c, err := a.hub.client(b.addr())
	if err != nil {
		t.Fatal(err)
	}
	g.pause()
	calls := make(chan error, 2)
	go func() {
		var resp raft.AppendEntriesResponse
		calls <- tbig.AppendEntries("b", b.addr(), bigAppend(), &resp)
	}()
	go func() {
		var resp raft.AppendEntriesResponse
		calls <- ta.AppendEntries("b", b.addr(), heartbeat(1), &resp)
	}()
	// Three call timeouts: the calls above expire meanwhile.
	time.Sleep(3 * time.Second)
	select {
	case <-c.done:
		t.Fatalf("the link failed while its peer was slow: %v", c.closedErr())
	default:
	}
	g.resume()
	for range 2 {
		// Answered in time or expired; never failed by the link.
		if err := <-calls; err != nil && !errors.Is(err, errTimeout) {
			t.Fatalf("a call waiting on a slow peer: %v, want a timeout or its answer", err)
		}
	}
	// Reading the large append first may outlast a call timeout on a
	// loaded machine: the heartbeat is retried.
	waitFor(t, "a heartbeat once the peer reads again", func() bool {
		var resp raft.AppendEntriesResponse
		return ta.AppendEntries("b", b.addr(), heartbeat(1), &resp) == nil && resp.Success
	})
	if c2, _ := a.hub.client(b.addr()); c2 != c {
		t.Fatal("the link to the slow peer was replaced")
	}
	if n := layer.accepted.Load(); n != 1 {
		t.Fatalf("the slow peer accepted %d links, want 1", n)
	}
}

// With no deadline on link writes, closing the Hub still ends a write
// waiting for a peer that does not read, and every goroutine.
func TestCloseEndsAWriteWaitingOnASlowPeer(t *testing.T) {
	before := runtime.NumGoroutine()
	stop := make(chan struct{})
	a, b, _, tbig, g, _ := slowPeer(t, stop)
	g.pause()
	call := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		call <- tbig.AppendEntries("b", b.addr(), bigAppend(), &resp)
	}()
	time.Sleep(200 * time.Millisecond) // the writer waits on the window
	err := within(t, 5*time.Second, "closing a hub whose link write waits", func() error {
		a.close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-call; err == nil {
		t.Fatal("an append to a peer that reads nothing succeeded after Close")
	}
	close(stop)
	b.close()
	waitGoroutines(t, before)
}

// Requests whose call ended (timed out) while they waited behind a slow
// peer are not sent once it reads again: at 3,000 partitions a link's
// queue grew to 6.6 MB of votes retried every second or two, all stale
// before the peer could read them, and the peer spent its CPU on them.
func TestRequestsOfEndedCallsAreNotSent(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	g := newGate()
	var bigWrite atomic.Bool
	// A call timeout of 3 s: the large append's call must not expire (and
	// its frame be dropped) before a loaded machine's writer takes it.
	a := newNodeWith(t, Config{Timeout: 3 * time.Second}, func(s raft.StreamLayer) raft.StreamLayer {
		return &watchedLayer{StreamLayer: s, bigWrite: &bigWrite}
	})
	b := newNodeWith(t, Config{}, func(s raft.StreamLayer) raft.StreamLayer {
		return &gatedLayer{StreamLayer: s, gate: g}
	})
	ta, tbig := a.group(t, "g"), a.group(t, "big")
	go answer(b.group(t, "big"), 0, stop)
	bg := b.group(t, "g")
	// The heartbeats that time out are of term staleTerm; the others of 1.
	const staleTerm = 7
	var received, stale atomic.Int32
	go func() {
		for {
			select {
			case rpc := <-bg.Consumer():
				received.Add(1)
				if rpc.Command.(*raft.AppendEntriesRequest).Term == staleTerm {
					stale.Add(1)
				}
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
			case <-stop:
				return
			}
		}
	}()
	var resp raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", b.addr(), heartbeat(1), &resp); err != nil || !resp.Success {
		t.Fatalf("heartbeat: %+v, %v", resp, err)
	}
	g.pause()
	go func() {
		var resp raft.AppendEntriesResponse
		tbig.AppendEntries("b", b.addr(), bigAppend(), &resp) // holds the writer
	}()
	waitFor(t, "the writer writes the large append (and waits in its Write)", bigWrite.Load)
	const staleCalls = 20
	calls := make(chan error, staleCalls)
	for range staleCalls {
		go func() {
			var resp raft.AppendEntriesResponse
			calls <- ta.AppendEntries("b", b.addr(), heartbeat(staleTerm), &resp)
		}()
	}
	for range staleCalls {
		if err := <-calls; !errors.Is(err, errTimeout) {
			t.Fatalf("a heartbeat to a peer that reads nothing: %v, want a timeout", err)
		}
	}
	g.resume()
	// Once the peer reads again a heartbeat goes through; on a loaded
	// machine reading the large append first may take longer than the
	// call timeout, so it is retried.
	waitFor(t, "a heartbeat once the peer reads again", func() bool {
		var resp raft.AppendEntriesResponse
		return ta.AppendEntries("b", b.addr(), heartbeat(1), &resp) == nil && resp.Success
	})
	if n := stale.Load(); n != 0 {
		t.Fatalf("the peer's group got %d of the %d heartbeats that timed out before they were written (%d heartbeats in all)", n, staleCalls, received.Load())
	}
}

// watchedLayer dials links whose writes of more than 1 MiB set bigWrite
// first.
type watchedLayer struct {
	raft.StreamLayer
	bigWrite *atomic.Bool
}

func (l *watchedLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := l.StreamLayer.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, bigWrite: l.bigWrite}, nil
}

type watchedConn struct {
	net.Conn
	bigWrite *atomic.Bool
}

func (c *watchedConn) Write(p []byte) (int, error) {
	if len(p) > 1<<20 {
		c.bigWrite.Store(true)
	}
	return c.Conn.Write(p)
}

// dropEnded keeps exactly the requests of calls still pending, whole and
// in order, large ones included.
func TestDropEndedKeepsPendingCalls(t *testing.T) {
	c := &client{calls: map[uint64]*call{2: {}, 4: {}, 5: {}}}
	var frames []byte
	for id := uint64(1); id <= 5; id++ {
		args := any(heartbeat(id))
		if id == 4 {
			args = bigAppend()
		}
		var err error
		if frames, err = appendRequest(frames, rpcAppendEntries, id, "g", args); err != nil {
			t.Fatal(err)
		}
	}
	kept, _ := c.dropEnded(frames, nil)
	fr := newFrameReader(bytes.NewReader(kept))
	for _, want := range []uint64{2, 4, 5} {
		b, err := fr.next(requestHeader)
		if err != nil {
			t.Fatalf("request %d: %v", want, err)
		}
		req, err := fr.decodeRequest(b)
		if err != nil || req.id != want {
			t.Fatalf("request %d: got id %d, %v", want, req.id, err)
		}
	}
	if _, err := fr.next(requestHeader); err != io.EOF {
		t.Fatalf("after the kept requests: %v, want EOF", err)
	}
}

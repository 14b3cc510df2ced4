package transport

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/freeport"
)

// countingListener counts the TCP connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Every group's streams to a peer share Config.Sessions TCP connections,
// Raft's pooled connections included.
func TestGroupsShareSessions(t *testing.T) {
	a := newMux(t, Config{Sessions: 2})
	ln := &countingListener{Listener: listen(t)}
	b := newMux(t, Config{Listener: ln})
	addr := raft.ServerAddress(b.Addr().String())
	var wg sync.WaitGroup
	for i := range 50 {
		id := groupID(i)
		ga, gb := mustGroup(t, a, id), mustGroup(t, b, id)
		ta := raft.NewNetworkTransportWithLogger(ga, 3, 5*time.Second, hclog.NewNullLogger())
		tb := raft.NewNetworkTransportWithLogger(gb, 3, 5*time.Second, hclog.NewNullLogger())
		t.Cleanup(func() { ta.Close(); tb.Close() })
		go func() {
			for rpc := range tb.Consumer() {
				rpc.Respond(&raft.AppendEntriesResponse{Term: rpc.Command.(*raft.AppendEntriesRequest).Term, Success: true}, nil)
			}
		}()
		for range 3 { // concurrent RPCs: Raft dials more than one connection
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resp raft.AppendEntriesResponse
				if err := ta.AppendEntries("b", addr, &raft.AppendEntriesRequest{Term: uint64(i + 1)}, &resp); err != nil || resp.Term != uint64(i+1) {
					t.Errorf("group %s: %+v, %v", id, resp, err)
				}
			}()
		}
	}
	wg.Wait()
	if n := ln.n.Load(); n != 2 {
		t.Fatalf("%d TCP connections accepted, want 2", n)
	}
}

// groupID names a test group.
func groupID(i int) string { return "p/t/" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// A peer that restarts on the same address is reached on a new session.
func TestPeerRestart(t *testing.T) {
	address, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Mux {
		ln, err := net.Listen("tcp", address)
		if err != nil {
			t.Fatal(err)
		}
		m := newMux(t, Config{Listener: ln})
		mustGroup(t, m, "g")
		return m
	}
	a := newMux(t, Config{})
	ga := mustGroup(t, a, "g")
	b := start()
	if _, err := ga.Dial(raft.ServerAddress(address), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// a's session ends when b's side closes.
	for deadline := time.Now().Add(10 * time.Second); a.openSessions() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session to the closed peer is still open")
		}
	}
	if _, err := ga.Dial(raft.ServerAddress(address), 5*time.Second); err == nil {
		t.Fatal("dial to a stopped peer succeeded")
	}
	start()
	c, err := ga.Dial(raft.ServerAddress(address), 5*time.Second)
	if err != nil {
		t.Fatalf("dial after the peer restarted: %v", err)
	}
	c.Close()
}

func (m *Mux) openSessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// A group whose reader stalls fills its own stream's window only: another
// group on the same session goes on.
func TestStalledGroupDoesNotBlockOthers(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	addr := raft.ServerAddress(b.Addr().String())
	slowA, slowB := mustGroup(t, a, "slow"), mustGroup(t, b, "slow")
	fastA, fastB := mustGroup(t, a, "fast"), mustGroup(t, b, "fast")
	slow, err := slowA.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slowB.Accept(); err != nil { // accepted, never read
		t.Fatal(err)
	}
	stalled := make(chan error, 1)
	go func() {
		_, err := slow.Write(make([]byte, 4<<20)) // far beyond a stream's window
		stalled <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-stalled:
		t.Fatalf("write to a stream nobody reads returned: %v", err)
	default:
	}
	fast, err := fastA.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := fastB.Accept()
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("x"), 1<<20)
	go fast.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("the other group's stream: %v", err)
	}
	// Closing the group ends the stalled write.
	slowA.Close()
	select {
	case err := <-stalled:
		if err == nil {
			t.Fatal("stalled write succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stalled write still blocked after its group closed")
	}
}

// A Dial to a peer that accepts TCP but never speaks fails, and the
// keep-alive gives the session up.
func TestSilentPeer(t *testing.T) {
	silent := listen(t)
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	m := newMux(t, Config{KeepAlive: 50 * time.Millisecond, KeepAliveTimeout: 100 * time.Millisecond})
	g := mustGroup(t, m, "g")
	if _, err := g.Dial(raft.ServerAddress(silent.Addr().String()), 5*time.Second); err == nil {
		t.Fatal("dial to a silent peer succeeded")
	}
	for deadline := time.Now().Add(10 * time.Second); m.openSessions() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session to a silent peer is still open")
		}
	}
}

// yamux's complaint about writing to a connection that closed under it (a
// peer restarting) is a debug line; its other errors stay errors.
func TestYamuxLoggerDemotesClosedConnection(t *testing.T) {
	var out bytes.Buffer
	l := yamuxLogger{hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace})}
	closed := &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
	l.Printf("[ERR] yamux: Failed to write body: %v", closed)
	l.Printf("[ERR] yamux: Invalid protocol version: %d", 7)
	l.Printf("[WARN] yamux: failed to send go away: %v", io.ErrClosedPipe)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("logged %d lines, want 3:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"[DEBUG] yamux: Failed to write body", "[ERROR] yamux: Invalid protocol version: 7", "[WARN]  yamux: failed to send go away"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
}

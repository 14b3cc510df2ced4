package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"
)

func newMux(t *testing.T, cfg Config) *Mux {
	t.Helper()
	if cfg.Listener == nil {
		cfg.Listener = listen(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func mustGroup(t *testing.T, m *Mux, id string) *Group {
	t.Helper()
	g, err := m.Group(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Two groups share one listener; every connection reaches its own group's
// Accept, raw and through raft's NetworkTransport.
func TestTwoGroupsOneListener(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	ids := []string{"p/orders/0", "p/orders/1"}
	for _, id := range ids {
		ga, gb := mustGroup(t, a, id), mustGroup(t, b, id)
		c, err := ga.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s, err := gb.Accept()
		if err != nil {
			t.Fatal(err)
		}
		msg := []byte("hello " + id)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("group %s got %q, %v", id, got, err)
		}
		c.Close()
		s.Close()
	}

	// Raft RPCs over NetworkTransports of two groups on the same two muxes.
	type pair struct{ client, server *raft.NetworkTransport }
	var pairs []pair
	for _, id := range []string{"meta", "p/t/0"} {
		ga, gb := mustGroup(t, a, id), mustGroup(t, b, id)
		ta := raft.NewNetworkTransportWithLogger(ga, 2, 5*time.Second, hclog.NewNullLogger())
		tb := raft.NewNetworkTransportWithLogger(gb, 2, 5*time.Second, hclog.NewNullLogger())
		t.Cleanup(func() { ta.Close(); tb.Close() })
		pairs = append(pairs, pair{ta, tb})
		go func(id string) {
			for rpc := range tb.Consumer() {
				req := rpc.Command.(*raft.AppendEntriesRequest)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: string(req.Entries[0].Data) == id}, nil)
			}
		}(id)
	}
	for i, id := range []string{"meta", "p/t/0"} {
		var resp raft.AppendEntriesResponse
		req := raft.AppendEntriesRequest{Term: uint64(10 + i), Entries: []*raft.Log{{Index: 1, Data: []byte(id)}}}
		if err := pairs[i].client.AppendEntries("b", raft.ServerAddress(b.Addr().String()), &req, &resp); err != nil {
			t.Fatal(err)
		}
		if !resp.Success || resp.Term != req.Term {
			t.Fatalf("group %s: RPC reached the wrong group: %+v", id, resp)
		}
	}
}

// A TCP connection must open with the session preface; anything else is
// closed unanswered.
func TestBadPrefaceRejected(t *testing.T) {
	m := newMux(t, Config{HandshakeTimeout: 500 * time.Millisecond})
	mustGroup(t, m, "g")
	cases := map[string][]byte{
		"bad magic":            []byte("HTTP/1.1 GET /\r\n\r\n"),
		"bad version":          []byte("LDRS\x09"),
		"group header instead": append([]byte("LDRG\x01\x00\x01"), 'g'),
		"short (timed)":        []byte("LDR"),
	}
	for name, preface := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(preface)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil && !isReset(err) {
				t.Fatalf("want the connection closed, got %v", err)
			}
			if len(got) > 0 {
				t.Fatalf("got %q, want no answer", got)
			}
		})
	}
	// The mux still serves good sessions.
	if _, err := mustGroup(t, newMux(t, Config{}), "g").Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A stream must open with a group header; a bad one is answered with the
// bad-header status and closed, and the session goes on serving.
func TestBadHeaderRejected(t *testing.T) {
	m := newMux(t, Config{HandshakeTimeout: 500 * time.Millisecond})
	mustGroup(t, m, "g")
	sess := rawSession(t, m.Addr().String())
	cases := map[string][]byte{
		"bad magic":     []byte("HTTP/1.1 GET /\r\n\r\n"),
		"bad version":   append([]byte("LDRG\x09\x00\x01"), 'g'),
		"zero length":   []byte("LDRG\x01\x00\x00"),
		"huge length":   []byte("LDRG\x01\xff\xff"),
		"short (timed)": []byte("LDR"),
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := sess.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(hdr)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("want the stream closed, got %v", err)
			}
			if len(got) != 1 || got[0] != statusBadHeader {
				t.Fatalf("status %v, want bad header", got)
			}
		})
	}
	c, err := sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(appendHeader(nil, "g"))
	var status [1]byte
	if _, err := io.ReadFull(c, status[:]); err != nil || status[0] != statusOK {
		t.Fatalf("good header on the same session: status %v, %v", status, err)
	}
}

// rawSession opens a session to address by hand.
func rawSession(t *testing.T, address string) *yamux.Session {
	t.Helper()
	c, err := net.Dial("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(appendPreface(nil, kindSession, "")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readAnswer(c); err != nil {
		t.Fatal(err)
	}
	sess, err := yamux.Client(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

func TestUnknownGroup(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	mustGroup(t, b, "known")
	_, err := mustGroup(t, a, "unknown").Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
	if !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("got %v, want ErrUnknownGroup", err)
	}
	// A closed group is unknown too.
	g := mustGroup(t, b, "closed")
	g.Close()
	_, err = mustGroup(t, a, "closed").Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
	if !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("got %v, want ErrUnknownGroup", err)
	}
}

func TestGroupIDs(t *testing.T) {
	m := newMux(t, Config{})
	mustGroup(t, m, "g")
	if _, err := m.Group("g"); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("duplicate: got %v", err)
	}
	if _, err := m.Group(""); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("empty: got %v", err)
	}
	if _, err := m.Group(string(make([]byte, MaxGroupIDLen+1))); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("long: got %v", err)
	}
}

func TestAcceptQueueFull(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{AcceptQueue: 1})
	mustGroup(t, b, "g")
	ga := mustGroup(t, a, "g")
	addr := raft.ServerAddress(b.Addr().String())
	if _, err := ga.Dial(addr, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := ga.Dial(addr, 5*time.Second); !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
}

// A Dial blocked on a peer that never answers returns when the group closes.
func TestCloseWhileDialing(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, never answer
		}
	}()
	g := mustGroup(t, newMux(t, Config{}), "g")
	done := make(chan error, 1)
	go func() {
		_, err := g.Dial(raft.ServerAddress(silent.Addr().String()), time.Minute)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	g.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Dial still blocked after Close")
	}
	if _, err := g.Accept(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}

// Close ends every goroutine and connection, including those Raft's
// NetworkTransport leaves behind.
func TestCloseLeaksNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		a, err := New(Config{Listener: listen(t), Logger: hclog.NewNullLogger()})
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(Config{Listener: listen(t), Logger: hclog.NewNullLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ga, _ := a.Group("g")
		gb, _ := b.Group("g")
		ta := raft.NewNetworkTransportWithLogger(ga, 2, 5*time.Second, hclog.NewNullLogger())
		tb := raft.NewNetworkTransportWithLogger(gb, 2, 5*time.Second, hclog.NewNullLogger())
		go func() {
			for rpc := range tb.Consumer() {
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			}
		}()
		var resp raft.AppendEntriesResponse
		if err := ta.AppendEntries("b", raft.ServerAddress(b.Addr().String()), &raft.AppendEntriesRequest{}, &resp); err != nil {
			t.Fatal(err)
		}
		// A half-open connection still in its handshake.
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		time.Sleep(50 * time.Millisecond)
		ta.Close()
		tb.Close()
		a.Close()
		b.Close()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+1 { // +1: tb's consumer loop never ends
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

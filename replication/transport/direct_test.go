package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A direct group's Dial opens a TCP connection of its own, no session: the
// peer's group accepts it, the bytes go both ways as written (a vector
// too), and WriteBuffers writes with one call on it but not on a stream.
func TestDirectGroupDialsItsOwnConnection(t *testing.T) {
	a := newMux(t, Config{ClusterID: "c", NodeID: "a"})
	ln := &countingListener{Listener: listen(t)}
	b := newMux(t, Config{Listener: ln, ClusterID: "c", NodeID: "b"})
	ga, err := a.DirectGroup("_links")
	if err != nil {
		t.Fatal(err)
	}
	gb := mustGroup(t, b, "_links")
	for i := range 2 {
		c, err := ga.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s, err := gb.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if n := ln.n.Load(); n != int64(i+1) {
			t.Fatalf("dial %d: the peer accepted %d TCP connections, want %d", i, n, i+1)
		}
		if a.openSessions() != 0 || b.openSessions() != 0 {
			t.Fatalf("sessions open: %d, %d; a direct dial opens none", a.openSessions(), b.openSessions())
		}
		for _, end := range []net.Conn{c, s} {
			if v, ok := end.(interface{ Vectored() bool }); !ok || !v.Vectored() {
				t.Fatalf("%T is not vectored: a direct TCP connection is", end)
			}
		}
		big := bytes.Repeat([]byte{byte(i), 1, 2, 3}, 64<<10)
		bufs := net.Buffers{[]byte("head"), big, []byte("tail")}
		want := bytes.Join([][]byte{[]byte("head"), big, []byte("tail")}, nil)
		done := make(chan error, 1)
		go func() {
			_, err := c.(interface {
				WriteBuffers(*net.Buffers) (int64, error)
			}).WriteBuffers(&bufs)
			done <- err
		}()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes unlike those written: %v", len(got), err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		ans := make([]byte, 6)
		if _, err := io.ReadFull(c, ans); err != nil || string(ans) != "answer" {
			t.Fatalf("answer %q, %v", ans, err)
		}
		c.Close()
		s.Close()
	}

	// A stream of a session is not vectored.
	gs := mustGroup(t, a, "p/t/0")
	mustGroup(t, b, "p/t/0")
	c, err := gs.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, ok := c.(interface{ Vectored() bool }); ok && v.Vectored() {
		t.Fatal("a yamux stream reports itself vectored")
	}
}

// A direct connection is refused by a node of another cluster, as a
// session is, and closing the group closes its direct connections.
func TestDirectGroupChecksClusterAndCloses(t *testing.T) {
	a := newMux(t, Config{ClusterID: "cluster-a"})
	other := newMux(t, Config{ClusterID: "cluster-b"})
	mustGroup(t, other, "_links")
	ga, err := a.DirectGroup("_links")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ga.Dial(raft.ServerAddress(other.Addr().String()), 5*time.Second); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("dial to another cluster: %v, want ErrOtherCluster", err)
	}

	b := newMux(t, Config{ClusterID: "cluster-a"})
	if _, err := ga.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("dial to a node without the group: %v, want ErrUnknownGroup", err)
	}
	gb := mustGroup(t, b, "_links")
	c, err := ga.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gb.Accept()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 1))
		read <- err
	}()
	gb.Close()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("read on a closed group's connection succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closing the group left a read on its direct connection blocked")
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err == nil {
		t.Fatal("the dialer's end still reads after the acceptor closed")
	}
	c.Close()
}

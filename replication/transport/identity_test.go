package transport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Two nodes of different clusters cannot open a session, whichever dials:
// the acceptor refuses it and the dialer gets a *ClusterMismatchError that
// names both ids.
func TestOtherClusterRefusedBothWays(t *testing.T) {
	a := newMux(t, Config{ClusterID: "cluster-a", NodeID: "a"})
	b := newMux(t, Config{ClusterID: "cluster-b", NodeID: "b"})
	ga, gb := mustGroup(t, a, "g"), mustGroup(t, b, "g")
	for _, c := range []struct {
		name          string
		from          *Group
		to            *Mux
		local, remote string
	}{{"a dials b", ga, b, "cluster-a", "cluster-b"}, {"b dials a", gb, a, "cluster-b", "cluster-a"}} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := c.from.Dial(raft.ServerAddress(c.to.Addr().String()), 5*time.Second)
			if err == nil {
				conn.Close()
				t.Fatal("dial to another cluster's node succeeded")
			}
			var mm *ClusterMismatchError
			if !errors.As(err, &mm) || !errors.Is(err, ErrOtherCluster) {
				t.Fatalf("got %v, want a *ClusterMismatchError", err)
			}
			if mm.Local != c.local || mm.Remote != c.remote {
				t.Fatalf("mismatch %+v, want local %s remote %s", mm, c.local, c.remote)
			}
			if msg := err.Error(); !strings.Contains(msg, c.local) || !strings.Contains(msg, c.remote) || !strings.Contains(msg, "--data-dir") {
				t.Fatalf("message %q does not name both clusters and what to do", msg)
			}
		})
	}
}

// The dialer checks the acceptor's answer too: an acceptor that answers
// "same cluster" with another id (a node that does not check) is refused.
func TestDialerChecksAcceptorsID(t *testing.T) {
	ln := listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		readPreface(c)
		c.Write(appendAnswer(nil, statusSameCluster, "cluster-b", "b"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		c.Read(b[:])
	}()
	t.Cleanup(func() { ln.Close() })
	a := newMux(t, Config{ClusterID: "cluster-a"})
	_, err := mustGroup(t, a, "g").Dial(raft.ServerAddress(ln.Addr().String()), 5*time.Second)
	if !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("got %v, want ErrOtherCluster", err)
	}
}

// Nodes of one cluster talk; so does a node that has no id yet (it is
// checked above the transport: see differ).
func TestSameClusterAndNoIDTalk(t *testing.T) {
	a := newMux(t, Config{ClusterID: "c1"})
	b := newMux(t, Config{ClusterID: "c1"})
	fresh := newMux(t, Config{})
	groups := map[*Mux]*Group{}
	for _, m := range []*Mux{a, b, fresh} {
		g := mustGroup(t, m, "g")
		groups[m] = g
		go func() {
			for {
				c, err := g.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	for _, pair := range [][2]*Mux{{a, b}, {b, a}, {a, fresh}, {fresh, a}} {
		c, err := groups[pair[0]].Dial(raft.ServerAddress(pair[1].Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatalf("%s -> %s: %v", pair[0].ClusterID(), pair[1].ClusterID(), err)
		}
		c.Close()
	}
}

// A hello answers the node's cluster id and node id, whatever the asker's
// cluster, and opens no session; SetClusterID changes what is answered and
// checked from then on.
func TestHello(t *testing.T) {
	m := newMux(t, Config{NodeID: "n1"})
	asker := newMux(t, Config{ClusterID: "other"})
	h, err := asker.Hello(context.Background(), m.Addr().String())
	if err != nil || h != (Hello{NodeID: "n1"}) {
		t.Fatalf("hello: %+v, %v; want node n1 without a cluster id", h, err)
	}
	if err := m.SetClusterID("c1"); err != nil {
		t.Fatal(err)
	}
	h, err = asker.Hello(context.Background(), m.Addr().String())
	if err != nil || h != (Hello{ClusterID: "c1", NodeID: "n1"}) {
		t.Fatalf("hello: %+v, %v; want c1/n1", h, err)
	}
	if _, err := mustGroup(t, asker, "g").Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("session after SetClusterID: %v, want ErrOtherCluster", err)
	}
	m.mu.Lock()
	n := len(m.sessions)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions open, want none", n)
	}
	if err := m.SetClusterID(strings.Repeat("x", MaxIDLen+1)); err == nil {
		t.Fatal("an id longer than MaxIDLen was taken")
	}
	// A hello to nobody fails.
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	if _, err := asker.Hello(context.Background(), addr); err == nil {
		t.Fatal("hello to a closed port succeeded")
	}
}

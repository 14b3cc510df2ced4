// Package faultnet is the in-process cluster tests' network: real TCP on
// 127.0.0.1 between named nodes, with links a test can cut or slow down.
//
// Every connection is opened through Network.Dialer(from), which knows the
// dialing node's name, and is addressed to a listener registered with
// Network.Listen(name), so each connection belongs to one link between two
// named nodes. The dialing side's end is wrapped:
//
//   - Partition(a, b) closes the open connections of the link a-b (both
//     directions: whichever node dialed) and fails new dials on it until
//     Heal; the other end sees the close as EOF. A cut is a reset, not a
//     black hole: Raft sees failed RPCs at once instead of timeouts.
//   - SetDelay(a, b, d) delays each write and each read of the link's
//     connections by d, adding about 2d to every round trip.
package faultnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrPartitioned is returned by reads, writes and dials on a cut link.
var ErrPartitioned = errors.New("faultnet: link partitioned")

type link struct{ a, b string }

func linkOf(a, b string) link {
	if a > b {
		a, b = b, a
	}
	return link{a, b}
}

// Network routes connections between named nodes.
type Network struct {
	mu    sync.Mutex
	names map[string]string // listener address -> node name
	cut   map[link]bool
	delay map[link]time.Duration
	conns map[*conn]struct{}
}

// New returns a network with every link up.
func New() *Network {
	return &Network{
		names: map[string]string{},
		cut:   map[link]bool{},
		delay: map[link]time.Duration{},
		conns: map[*conn]struct{}{},
	}
}

// Listen listens for node name on address ("127.0.0.1:0" when empty) and
// registers the address as the node's.
func (n *Network) Listen(name, address string) (net.Listener, error) {
	if address == "" {
		address = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.names[ln.Addr().String()] = name
	n.mu.Unlock()
	return ln, nil
}

// Dialer returns the dial function of node from (for transport.Config.Dial).
func (n *Network) Dialer(from string) func(ctx context.Context, address string) (net.Conn, error) {
	return func(ctx context.Context, address string) (net.Conn, error) {
		n.mu.Lock()
		to, ok := n.names[address]
		l := linkOf(from, to)
		cut := n.cut[l]
		n.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("faultnet: dial %s from %s: no node listens there", address, from)
		}
		if cut {
			return nil, fmt.Errorf("faultnet: dial %s (%s) from %s: %w", address, to, from, ErrPartitioned)
		}
		var d net.Dialer
		raw, err := d.DialContext(ctx, "tcp", address)
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: raw, n: n, link: l}
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.cut[l] { // cut while dialing
			raw.Close()
			return nil, fmt.Errorf("faultnet: dial %s (%s) from %s: %w", address, to, from, ErrPartitioned)
		}
		n.conns[c] = struct{}{}
		return c, nil
	}
}

// Partition cuts the link between a and b.
func (n *Network) Partition(a, b string) {
	n.mu.Lock()
	l := linkOf(a, b)
	n.cut[l] = true
	var doomed []*conn
	for c := range n.conns {
		if c.link == l {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// Isolate cuts every link between node a and the other given nodes.
func (n *Network) Isolate(a string, others ...string) {
	for _, b := range others {
		if b != a {
			n.Partition(a, b)
		}
	}
}

// Heal restores every cut link. Delays stay.
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.cut)
	n.mu.Unlock()
}

// SetDelay delays the link between a and b by d in each direction; 0
// removes the delay.
func (n *Network) SetDelay(a, b string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d <= 0 {
		delete(n.delay, linkOf(a, b))
		return
	}
	n.delay[linkOf(a, b)] = d
}

func (n *Network) state(l link) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[l], n.delay[l]
}

// conn is the dialing end of a link's connection.
type conn struct {
	net.Conn
	n    *Network
	link link
	once sync.Once
}

func (c *conn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	cut, d := c.n.state(c.link)
	if cut {
		c.Close()
		return 0, ErrPartitioned
	}
	if d > 0 && k > 0 {
		time.Sleep(d)
	}
	return k, err
}

func (c *conn) Write(b []byte) (int, error) {
	cut, d := c.n.state(c.link)
	if d > 0 {
		time.Sleep(d)
		cut, _ = c.n.state(c.link)
	}
	if cut {
		c.Close()
		return 0, ErrPartitioned
	}
	return c.Conn.Write(b)
}

func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		c.n.mu.Lock()
		delete(c.n.conns, c)
		c.n.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}

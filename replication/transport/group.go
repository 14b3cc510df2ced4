package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Group is one Raft group's stream layer (raft.StreamLayer) on a Mux.
type Group struct {
	m      *Mux
	id     string
	direct bool // Dial opens a connection of its own (Mux.DirectGroup)
	queue  chan net.Conn
	ctx    context.Context // cancelled at Close: aborts dials
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[*conn]struct{} // open connections, accepted or dialed
	reserved int                // queue slots promised to routed connections
	closed   bool
	// serve, when set (Serve), takes routed connections instead of the
	// queue.
	serve func(net.Conn)
}

var _ raft.StreamLayer = (*Group)(nil)

// ID is the group's id.
func (g *Group) ID() string { return g.id }

// Addr is the node's advertised Raft address.
func (g *Group) Addr() net.Addr { return g.m.addr }

// Accept waits for the next connection routed to this group.
func (g *Group) Accept() (net.Conn, error) {
	select {
	case c := <-g.queue:
		return c, nil
	case <-g.ctx.Done():
		return nil, fmt.Errorf("%w: group %q", ErrClosed, g.id)
	}
}

// Serve hands every connection routed to the group from now on to h,
// called in the goroutine that routed it (the Mux's own, one per accepted
// stream, which ends with h), instead of queueing it for Accept. A group
// served so keeps no goroutine waiting in Accept: a node holds thousands of
// groups, nearly all idle. h owns the connection and closes it;
// Close still closes it too, failing a read or write blocked on it, so h
// ends once the group closes. Connections queued before Serve are handed
// to h in goroutines of their own.
func (g *Group) Serve(h func(net.Conn)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.serve = h
	for {
		select {
		case c := <-g.queue:
			go h(c)
		default:
			return
		}
	}
}

// Dial opens a stream to the same group on the node at address, on the
// group's session to it (dialed when there is none); for a direct group
// (Mux.DirectGroup), a connection of its own.
func (g *Group) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(g.ctx, timeout)
	defer cancel()
	raw, err := g.open(ctx, string(address))
	if err != nil {
		return nil, g.dialError(address, err)
	}
	c, ok := g.track(raw)
	if !ok {
		return nil, fmt.Errorf("%w: group %q", ErrClosed, g.id)
	}
	// Close aborts the handshake.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	defer stop()
	raw.SetDeadline(time.Now().Add(timeout))
	if _, err := raw.Write(appendHeader(nil, g.id)); err != nil {
		c.Close()
		return nil, g.dialError(address, err)
	}
	var status [1]byte
	if _, err := io.ReadFull(raw, status[:]); err != nil {
		c.Close()
		return nil, g.dialError(address, err)
	}
	if err := statusError(status[0], g.id); err != nil {
		c.Close()
		return nil, fmt.Errorf("transport: dial %s: %w", address, err)
	}
	if !stop() {
		// The timeout or Close fired after the handshake: the deadline it
		// set would break the stream later.
		c.Close()
		return nil, g.dialError(address, ctx.Err())
	}
	raw.SetDeadline(time.Time{})
	return c, nil
}

// open opens the connection Dial hands its group header to: a stream of
// the group's session to address, or for a direct group a connection of
// its own, its preface exchanged.
func (g *Group) open(ctx context.Context, address string) (net.Conn, error) {
	if !g.direct {
		sess, err := g.m.session(ctx, address, g.id)
		if err != nil {
			return nil, err
		}
		return sess.OpenStream()
	}
	raw, err := g.m.cfg.Dial(ctx, address)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	err = g.m.handshake(raw, address, kindDirect)
	if !stop() && err == nil {
		err = ctx.Err() // the deadline set by stop would break the connection later
	}
	if err != nil {
		raw.Close()
		return nil, err
	}
	return raw, nil
}

func (g *Group) dialError(address raft.ServerAddress, err error) error {
	if g.ctx.Err() != nil {
		return fmt.Errorf("%w: group %q", ErrClosed, g.id)
	}
	return fmt.Errorf("transport: dial %s (group %q): %w", address, g.id, err)
}

// Close unregisters the group, stops Accept and Dial, and closes every
// connection the group accepted or dialed, so no Raft goroutine stays
// blocked on one.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.cancel()
	conns := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()

	g.m.mu.Lock()
	if g.m.groups[g.id] == g {
		delete(g.m.groups, g.id)
	}
	g.m.mu.Unlock()

	for _, c := range conns {
		c.Close()
	}
	for {
		select {
		case c := <-g.queue:
			c.Close()
		default:
			return nil
		}
	}
}

// track wraps c so that the group closes it at Close; false when the
// group is already closed (c is then closed).
func (g *Group) track(raw net.Conn) (*conn, bool) {
	c := &conn{Conn: raw, g: g}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		raw.Close()
		return nil, false
	}
	g.conns[c] = struct{}{}
	return c, true
}

// reserve promises raw a queue slot.
func (g *Group) reserve(raw net.Conn) (*conn, byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, statusUnknownGroup
	}
	if len(g.queue)+g.reserved >= cap(g.queue) {
		return nil, statusBusy
	}
	g.reserved++
	c := &conn{Conn: raw, g: g}
	g.conns[c] = struct{}{}
	return c, statusOK
}

func (g *Group) unreserve(c *conn) {
	g.mu.Lock()
	g.reserved--
	delete(g.conns, c)
	g.mu.Unlock()
}

// deliver queues a reserved connection, or returns the function that
// takes it (Serve); false when the group closed.
func (g *Group) deliver(c *conn) (serve func(net.Conn), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserved--
	if g.closed {
		delete(g.conns, c)
		return nil, false
	}
	if g.serve != nil {
		return g.serve, true
	}
	g.queue <- c // a slot was reserved: never blocks
	return nil, true
}

func (g *Group) forget(c *conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// WriteBuffers writes bufs as one write: writev on a TCP connection (a
// direct group's, Mux.DirectGroup), one Write per buffer on any other.
// Vectored reports which.
func (c *conn) WriteBuffers(bufs *net.Buffers) (int64, error) { return bufs.WriteTo(c.Conn) }

// Vectored reports whether WriteBuffers writes with one system call (a
// TCP connection without TLS).
func (c *conn) Vectored() bool {
	_, ok := c.Conn.(*net.TCPConn)
	return ok
}

// conn is a stream a group closes at Close.
type conn struct {
	net.Conn
	g    *Group
	once sync.Once
	err  error
}

// Close closes the stream and fails a Read or Write blocked on it (a yamux
// stream closed here still reads until its peer closes its end).
func (c *conn) Close() error {
	c.once.Do(func() {
		c.Conn.SetDeadline(time.Now())
		c.err = c.Conn.Close()
		c.g.forget(c)
	})
	return c.err
}

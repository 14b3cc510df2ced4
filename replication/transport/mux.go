package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config configures a Mux.
type Config struct {
	// Listener is the node's one Raft listener. Required; the Mux owns and
	// closes it.
	Listener net.Listener
	// Advertise is the address peers dial, reported by every group's Addr
	// (Raft's LocalAddr). nil: the listener's address.
	Advertise net.Addr
	// Dial opens a connection; ctx carries the dial's timeout and is
	// cancelled when the group closes. nil: TCP.
	Dial func(ctx context.Context, address string) (net.Conn, error)
	// HandshakeTimeout bounds reading the header on accept. 0: 5s.
	HandshakeTimeout time.Duration
	// AcceptQueue is each group's queue of accepted connections not yet
	// taken by Raft; a connection beyond it is refused. 0: 64.
	AcceptQueue int
	// Logger; nil: hclog's default logger.
	Logger hclog.Logger
}

// Mux multiplexes every Raft group of a node over one listener.
type Mux struct {
	cfg  Config
	ln   net.Listener
	addr net.Addr
	log  hclog.Logger

	mu      sync.Mutex
	groups  map[string]*Group
	pending map[net.Conn]struct{} // accepted, header not yet routed
	closed  bool
	wg      sync.WaitGroup
}

// New starts accepting on cfg.Listener.
func New(cfg Config) (*Mux, error) {
	if cfg.Listener == nil {
		return nil, errors.New("transport: Config.Listener is required")
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = func(ctx context.Context, address string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", address)
		}
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Second
	}
	if cfg.AcceptQueue <= 0 {
		cfg.AcceptQueue = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	m := &Mux{
		cfg:     cfg,
		ln:      cfg.Listener,
		addr:    cfg.Advertise,
		log:     cfg.Logger.Named("raft-mux"),
		groups:  map[string]*Group{},
		pending: map[net.Conn]struct{}{},
	}
	if m.addr == nil {
		m.addr = cfg.Listener.Addr()
	}
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr is the address peers dial.
func (m *Mux) Addr() net.Addr { return m.addr }

// Group registers a group and returns its stream layer, for
// raft.NewNetworkTransport. Closing the stream layer (as the
// NetworkTransport does on Close) unregisters the group.
func (m *Mux) Group(id string) (*Group, error) {
	if err := validGroupID(id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, ok := m.groups[id]; ok {
		return nil, fmt.Errorf("%w: %q", ErrGroupExists, id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Group{
		m:      m,
		id:     id,
		queue:  make(chan net.Conn, m.cfg.AcceptQueue),
		conns:  map[*conn]struct{}{},
		ctx:    ctx,
		cancel: cancel,
	}
	m.groups[id] = g
	return g, nil
}

// Close stops accepting, closes every group and every connection, and
// waits for the Mux's goroutines.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	groups := make([]*Group, 0, len(m.groups))
	for _, g := range m.groups {
		groups = append(groups, g)
	}
	for c := range m.pending {
		c.Close()
	}
	m.mu.Unlock()
	err := m.ln.Close()
	for _, g := range groups {
		g.Close()
	}
	m.wg.Wait()
	return err
}

func (m *Mux) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (EMFILE, ...): back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("accept failed; retrying", "error", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			c.Close()
			return
		}
		m.pending[c] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.route(c)
	}
}

// route reads the header of an accepted connection and queues it on its
// group, or answers with an error status and closes it.
func (m *Mux) route(c net.Conn) {
	defer m.wg.Done()
	handed := false
	defer func() {
		m.mu.Lock()
		delete(m.pending, c)
		m.mu.Unlock()
		if !handed {
			c.Close()
		}
	}()
	deadline := time.Now().Add(m.cfg.HandshakeTimeout)
	c.SetDeadline(deadline)
	id, err := readHeader(c)
	if err != nil {
		m.log.Warn("rejected connection", "remote", c.RemoteAddr(), "error", err)
		c.Write([]byte{statusBadHeader})
		return
	}
	m.mu.Lock()
	g := m.groups[id]
	m.mu.Unlock()
	if g == nil {
		m.log.Warn("rejected connection for unknown group", "remote", c.RemoteAddr(), "group", id)
		c.Write([]byte{statusUnknownGroup})
		return
	}
	tc, status := g.reserve(c)
	if status != statusOK {
		m.log.Warn("rejected connection", "remote", c.RemoteAddr(), "group", id, "error", statusError(status, id))
		c.Write([]byte{status})
		return
	}
	if _, err := c.Write([]byte{statusOK}); err != nil {
		g.unreserve(tc)
		return
	}
	c.SetDeadline(time.Time{})
	handed = g.deliver(tc)
}

// Group is one Raft group's stream layer (raft.StreamLayer) on a Mux.
type Group struct {
	m      *Mux
	id     string
	queue  chan net.Conn
	ctx    context.Context // cancelled at Close: aborts dials
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[*conn]struct{} // open connections, accepted or dialed
	reserved int                // queue slots promised to routed connections
	closed   bool
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

// Dial opens a connection to the same group on the node at address.
func (g *Group) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(g.ctx, timeout)
	defer cancel()
	raw, err := g.m.cfg.Dial(ctx, string(address))
	if err != nil {
		if g.ctx.Err() != nil {
			return nil, fmt.Errorf("%w: group %q", ErrClosed, g.id)
		}
		return nil, err
	}
	c, ok := g.track(raw)
	if !ok {
		return nil, fmt.Errorf("%w: group %q", ErrClosed, g.id)
	}
	// Close aborts the handshake by closing the connection.
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
		// set would break the connection later.
		c.Close()
		return nil, g.dialError(address, ctx.Err())
	}
	raw.SetDeadline(time.Time{})
	return c, nil
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

// deliver queues a reserved connection; false when the group closed.
func (g *Group) deliver(c *conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserved--
	if g.closed {
		delete(g.conns, c)
		return false
	}
	g.queue <- c // a slot was reserved: never blocks
	return true
}

func (g *Group) forget(c *conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// conn is a connection a group closes at Close.
type conn struct {
	net.Conn
	g    *Group
	once sync.Once
	err  error
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.err = c.Conn.Close()
		c.g.forget(c)
	})
	return c.err
}

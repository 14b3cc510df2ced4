package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
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
	// cancelled when the Mux closes. nil: TCP.
	Dial func(ctx context.Context, address string) (net.Conn, error)
	// HandshakeTimeout bounds reading a session preface and a stream's
	// group header on accept. 0: 5s.
	HandshakeTimeout time.Duration
	// DialTimeout bounds opening a session to a peer (TCP dial and
	// preface). 0: 10s.
	DialTimeout time.Duration
	// KeepAlive is how often a session pings its peer; a ping not
	// answered within KeepAliveTimeout closes the session (and every
	// stream on it), so a peer that vanished without a reset is noticed.
	// Generous, so that a node starved of CPU does not lose every stream
	// to a peer at once (Raft's own RPC timeouts still fail a slow RPC).
	// 0: 10s and 30s.
	KeepAlive, KeepAliveTimeout time.Duration
	// Sessions is the number of sessions per peer; each group uses one,
	// chosen by a hash of its id, so that no single session's writer
	// carries every group. 0: 4.
	Sessions int
	// AcceptQueue is each group's queue of accepted connections not yet
	// taken by Raft; a connection beyond it is refused. 0: 64.
	AcceptQueue int
	// ClusterID is the id of the node's cluster, sent and checked in every
	// session's preface (identity.go); "": none yet (SetClusterID).
	ClusterID string
	// NodeID is the node's id, answered to a hello.
	NodeID string
	// Logger; nil: hclog's default logger.
	Logger hclog.Logger
}

func (cfg *Config) setDefaults() {
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = func(ctx context.Context, address string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", address)
		}
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 10 * time.Second
	}
	if cfg.KeepAliveTimeout <= 0 {
		cfg.KeepAliveTimeout = 30 * time.Second
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = 4
	}
	if cfg.AcceptQueue <= 0 {
		cfg.AcceptQueue = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
}

// Mux multiplexes every Raft group of a node over one listener, and every
// group's connections to a peer over one session.
type Mux struct {
	cfg    Config
	ln     net.Listener
	addr   net.Addr
	log    hclog.Logger
	yamux  *yamux.Config
	ctx    context.Context // cancelled at Close: aborts session dials
	cancel context.CancelFunc

	clusterID atomic.Pointer[string]
	mismatch  mismatchLog

	mu       sync.Mutex
	groups   map[string]*Group
	peers    map[peerKey]*peer           // outgoing sessions
	sessions map[*yamux.Session]struct{} // every open session, both ways
	pending  map[net.Conn]struct{}       // accepted, preface or header not yet read
	closed   bool
	wg       sync.WaitGroup
}

// New starts accepting on cfg.Listener.
func New(cfg Config) (*Mux, error) {
	if cfg.Listener == nil {
		return nil, errors.New("transport: Config.Listener is required")
	}
	if len(cfg.ClusterID) > MaxIDLen || len(cfg.NodeID) > MaxIDLen {
		return nil, fmt.Errorf("transport: cluster and node ids of at most %d bytes", MaxIDLen)
	}
	cfg.setDefaults()
	m := &Mux{
		cfg:      cfg,
		ln:       cfg.Listener,
		addr:     cfg.Advertise,
		log:      cfg.Logger.Named("raft-mux"),
		groups:   map[string]*Group{},
		peers:    map[peerKey]*peer{},
		sessions: map[*yamux.Session]struct{}{},
		pending:  map[net.Conn]struct{}{},
	}
	m.yamux = sessionConfig(cfg, m.log)
	m.clusterID.Store(&cfg.ClusterID)
	m.ctx, m.cancel = context.WithCancel(context.Background())
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
func (m *Mux) Group(id string) (*Group, error) { return m.group(id, false) }

// DirectGroup registers a group whose Dial opens a TCP connection of its
// own (Config.Dial) instead of a stream of a session: a connection that
// carries many groups' bytes for long (package raftrpc's links, which
// multiplex the groups themselves) skips yamux's framing and its two
// copies of every byte, and can be written with writev
// (Conn.WriteBuffers). The peer's Mux accepts such a connection for any
// group; a session's stream to a direct group is accepted too.
func (m *Mux) DirectGroup(id string) (*Group, error) { return m.group(id, true) }

func (m *Mux) group(id string, direct bool) (*Group, error) {
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
		direct: direct,
		queue:  make(chan net.Conn, m.cfg.AcceptQueue),
		conns:  map[*conn]struct{}{},
		ctx:    ctx,
		cancel: cancel,
	}
	m.groups[id] = g
	return g, nil
}

// Close stops accepting, closes every group, stream and session, and
// waits for the Mux's goroutines.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.cancel()
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
	m.closeSessions()
	m.wg.Wait()
	m.closeSessions() // sessions a dial finished meanwhile
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
		if !m.addPending(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.serveSession(c)
	}
}

// addPending records an accepted connection or stream not yet routed, so
// that Close closes it; false when the Mux is closed.
func (m *Mux) addPending(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.pending[c] = struct{}{}
	return true
}

func (m *Mux) removePending(c net.Conn) {
	m.mu.Lock()
	delete(m.pending, c)
	m.mu.Unlock()
}

// route reads the group header of an accepted stream and queues it on its
// group (or serves it there, Group.Serve), or answers with an error status
// and closes it.
func (m *Mux) route(c net.Conn) {
	defer m.wg.Done()
	handed := false
	defer func() {
		m.removePending(c)
		if !handed {
			c.Close()
		}
	}()
	deadline := time.Now().Add(m.cfg.HandshakeTimeout)
	c.SetDeadline(deadline)
	id, err := readHeader(c)
	if err != nil {
		m.log.Warn("rejected stream", "remote", c.RemoteAddr(), "error", err)
		c.Write([]byte{statusBadHeader})
		return
	}
	m.mu.Lock()
	g := m.groups[id]
	m.mu.Unlock()
	if g == nil {
		m.log.Warn("rejected stream for unknown group", "remote", c.RemoteAddr(), "group", id)
		c.Write([]byte{statusUnknownGroup})
		return
	}
	tc, status := g.reserve(c)
	if status != statusOK {
		m.log.Warn("rejected stream", "remote", c.RemoteAddr(), "group", id, "error", statusError(status, id))
		c.Write([]byte{status})
		return
	}
	if _, err := c.Write([]byte{statusOK}); err != nil {
		g.unreserve(tc)
		return
	}
	c.SetDeadline(time.Time{})
	serve, ok := g.deliver(tc)
	handed = ok
	if serve != nil {
		m.removePending(c)
		serve(tc)
	}
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// Streams in flight per session (opened, not yet acknowledged by the
// peer's accept): yamux blocks an open beyond it. The accepting side takes
// streams at once, so this bounds a burst (every group dialing at start),
// not the number of open streams.
const sessionBacklog = 1024

// StreamWindow is the most a stream's sender may have in flight, unread by
// the peer (yamux's default is 256 KiB). Every partition's appends to a
// peer share one raftrpc link, so this bounds the bytes in flight of all of
// them together: at 256 KiB the 3-node produce benchmark ran 15% below
// NetworkTransport's stream per group. The receiver buffers at most this
// much per stream, and only while its reader lags.
const StreamWindow = 4 << 20

func sessionConfig(cfg Config, log hclog.Logger) *yamux.Config {
	y := yamux.DefaultConfig()
	y.AcceptBacklog = sessionBacklog
	y.EnableKeepAlive = true
	y.KeepAliveInterval = cfg.KeepAlive
	// yamux waits this long for a ping's answer and for a frame to be
	// taken by the session's writer; then it closes the session.
	y.ConnectionWriteTimeout = cfg.KeepAliveTimeout
	// No timeout on a stream's open: on a node starved of CPU it closed
	// whole sessions; the keep-alive notices a peer that stopped reading,
	// and Group.Dial's own deadline bounds each open.
	y.StreamOpenTimeout = 0
	// A stream closed here whose peer never closes its end is dropped
	// after this (yamux keeps its state until then).
	y.StreamCloseTimeout = 30 * time.Second
	y.MaxStreamWindowSize = StreamWindow
	y.LogOutput = nil
	y.Logger = yamuxLogger{log}
	return y
}

// yamuxLogger gives yamux's printf lines to hclog at the level their
// "[ERR]"/"[WARN]" prefix names, except a write or read that failed
// because the connection was closed or reset: that is a peer restarting
// or a session being replaced, which the keep-alive and the redial
// handle, so it is logged at debug like the transport's own notes on it.
type yamuxLogger struct{ log hclog.Logger }

func (l yamuxLogger) Print(v ...any)            { l.line(fmt.Sprint(v...), v) }
func (l yamuxLogger) Println(v ...any)          { l.line(fmt.Sprint(v...), v) }
func (l yamuxLogger) Printf(f string, v ...any) { l.line(fmt.Sprintf(f, v...), v) }

func (l yamuxLogger) line(msg string, args []any) {
	level, text := hclog.Info, msg
	switch {
	case strings.HasPrefix(msg, "[ERR] "):
		level, text = hclog.Error, msg[len("[ERR] "):]
	case strings.HasPrefix(msg, "[WARN] "):
		level, text = hclog.Warn, msg[len("[WARN] "):]
	}
	for _, a := range args {
		if err, ok := a.(error); ok && peerGone(err) {
			level = hclog.Debug
		}
	}
	l.log.Log(level, text)
}

// peerGone reports an error that only says the connection is over.
func peerGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// peerKey names one of the outgoing sessions to an address.
type peerKey struct {
	address string
	slot    int
}

// peer is an outgoing session: dialed once, shared by the groups hashed
// to its slot, dialed again when it closes.
type peer struct {
	ready chan struct{} // closed once the dial finished
	sess  *yamux.Session
	err   error
}

// session returns group's open session to address, dialing one when there
// is none (one dial at a time per session; every caller waits for it, or
// for its own ctx).
func (m *Mux) session(ctx context.Context, address, group string) (*yamux.Session, error) {
	h := fnv.New32a()
	h.Write([]byte(group))
	key := peerKey{address, int(h.Sum32() % uint32(m.cfg.Sessions))}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	p := m.peers[key]
	if p == nil || p.failed() {
		p = &peer{ready: make(chan struct{})}
		m.peers[key] = p
		m.wg.Add(1)
		go m.dialSession(address, p)
	}
	m.mu.Unlock()
	select {
	case <-p.ready:
		if p.err != nil {
			return nil, p.err
		}
		return p.sess, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failed reports whether p's dial is over and gave no usable session.
func (p *peer) failed() bool {
	select {
	case <-p.ready:
		return p.err != nil || p.sess.IsClosed()
	default:
		return false
	}
}

func (m *Mux) dialSession(address string, p *peer) {
	defer m.wg.Done()
	defer close(p.ready)
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.DialTimeout)
	defer cancel()
	raw, err := m.cfg.Dial(ctx, address)
	if err != nil {
		p.err = m.sessionError(address, err)
		return
	}
	if err := m.handshake(raw, address, kindSession); err != nil {
		raw.Close()
		p.err = m.sessionError(address, err)
		return
	}
	sess, err := yamux.Client(newCoalescedConn(raw), m.yamux)
	if err != nil {
		raw.Close()
		p.err = m.sessionError(address, err)
		return
	}
	if !m.addSession(sess) {
		p.err = ErrClosed
		return
	}
	p.sess = sess
	m.wg.Add(1)
	go m.forgetAtClose(sess)
}

func (m *Mux) sessionError(address string, err error) error {
	if m.ctx.Err() != nil {
		return ErrClosed
	}
	return fmt.Errorf("transport: session to %s: %w", address, err)
}

// addSession records an open session so that Close closes it; false (and
// sess closed) when the Mux is closed.
func (m *Mux) addSession(sess *yamux.Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		sess.Close()
		return false
	}
	m.sessions[sess] = struct{}{}
	return true
}

// forgetAtClose drops a session from the Mux once it closes (its peer went
// away, a keep-alive failed, or the Mux closed).
func (m *Mux) forgetAtClose(sess *yamux.Session) {
	defer m.wg.Done()
	<-sess.CloseChan()
	m.mu.Lock()
	delete(m.sessions, sess)
	m.mu.Unlock()
}

func (m *Mux) closeSessions() {
	m.mu.Lock()
	sessions := make([]*yamux.Session, 0, len(m.sessions))
	for s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
}

// serveSession reads an accepted connection's preface (identity.go), then
// routes every stream its peer opens.
func (m *Mux) serveSession(c net.Conn) {
	defer m.wg.Done()
	c.SetDeadline(time.Now().Add(m.cfg.HandshakeTimeout))
	kind, open, err := m.accept(c)
	m.removePending(c)
	if errors.Is(err, io.EOF) {
		// Closed before a byte: a reachability probe (another node's
		// check of a sleeping partition's leader, cluster/hibernate.go)
		// or a port scan, nothing wrong.
		m.log.Debug("connection closed before its preface", "remote", c.RemoteAddr())
		c.Close()
		return
	}
	if err != nil {
		m.log.Warn("rejected connection", "remote", c.RemoteAddr(), "error", err)
		c.Close()
		return
	}
	if !open { // a hello, answered; or another cluster's node, refused
		c.Close()
		return
	}
	if kind == kindDirect {
		// One group's connection: routed as a session's stream is.
		if !m.addPending(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		m.route(c)
		return
	}
	c.SetDeadline(time.Time{})
	sess, err := yamux.Server(newCoalescedConn(c), m.yamux)
	if err != nil {
		c.Close()
		return
	}
	if !m.addSession(sess) {
		return
	}
	defer func() {
		sess.Close()
		m.mu.Lock()
		delete(m.sessions, sess)
		m.mu.Unlock()
	}()
	for {
		s, err := sess.AcceptStream()
		if err != nil {
			return
		}
		if !m.addPending(s) {
			s.Close()
			return
		}
		m.wg.Add(1)
		go m.route(s)
	}
}

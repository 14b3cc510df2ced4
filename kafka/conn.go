package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// conn is one client connection: a reader that decodes and starts requests
// in arrival order and a writer that answers them in the same order.
type conn struct {
	s          *Server
	nc         net.Conn
	remoteHost string
	principal  Principal // the core's form of sess.id; set by identify
	sess       session
	log        *slog.Logger
	ctx        context.Context
	cancel     context.CancelFunc
	// rctx is the requests' context: ctx carrying the connection's identity
	// (auth.NewContext) once it is decided.
	rctx context.Context
	// pending holds the requests not yet answered, in arrival order; its
	// capacity is the connection's in-flight limit.
	pending chan *request
	// fetches bounds the fetch responses the connection holds unwritten.
	fetches *connBudget
	// id names the connection to the core (broker.ShareFetchRequest.Conn),
	// unique in the process; shared is set once a ShareFetch has used it,
	// so that its close closes its share sessions.
	id     uint64
	shared atomic.Bool
}

// connIDs numbers the connections (conn.id), from 1.
var connIDs atomic.Uint64

// request is one request in flight on a connection.
type request struct {
	ctx  context.Context
	c    *conn
	hdr  header
	kreq kmsg.Request

	done chan struct{} // closed when resp, afterWrite and fatal are set
	resp kmsg.Response // nil: nothing is sent
	// afterWrite runs once the response is written (or dropped), e.g. to
	// return a fetch's memory to the connection's fetch budget.
	afterWrite func()
	// fatal closes the connection after this request (an acks=0 produce
	// that failed: the client learns of it only that way, as in Kafka; a
	// failed SASL login).
	fatal error
	// token, when isToken, is a bare SASL token answering a SaslHandshake
	// v0 exchange: written as a size-prefixed frame without a header.
	token   []byte
	isToken bool
}

func newConn(s *Server, nc net.Conn) *conn {
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{
		s: s, nc: nc, remoteHost: host, ctx: ctx, cancel: cancel, rctx: ctx,
		log:     s.log.With("remote", nc.RemoteAddr().String()),
		pending: make(chan *request, s.cfg.MaxInFlight),
		fetches: newConnBudget(s.cfg.MaxConnFetchBytes),
		id:      connIDs.Add(1),
	}
}

// serve runs the connection until either side ends it, and returns once
// every goroutine it started has returned.
func (c *conn) serve() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.write()
	}()
	c.read()
	close(c.pending)
	<-writerDone
	c.cancel()
	c.nc.Close()
	// Every request has been answered: the share sessions the connection
	// opened end with it, and their members' records go to the others.
	if sc, ok := c.s.core.(shareCore); ok && c.shared.Load() {
		sc.ShareConnClosed(c.id)
	}
}

func (c *conn) read() {
	defer c.cancel()
	if !c.open() {
		return
	}
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		limit := c.frameLimit()
		body, err := readFrame(c.nc, limit)
		if errors.Is(err, errFrameTooLarge) && limit < c.s.cfg.MaxRequestBytes {
			err = fmt.Errorf("%w: before it has logged in, a connection may send requests of at most %d bytes (SaslHandshake, SaslAuthenticate, ApiVersions)", err, limit)
		}
		if err != nil {
			c.logReadError(err)
			return
		}
		if c.sess.x != nil && c.sess.legacy {
			if !c.legacyToken(body) {
				return
			}
			continue
		}
		h, kreq, err := parseRequest(body)
		if errors.Is(err, errUnsupportedVer) && h.key == apiVersionsKey {
			if !c.enqueue(c.answered(h, unsupportedAPIVersions(h))) {
				return
			}
			continue
		}
		if err != nil {
			c.log.Warn("kafka connection closed: malformed request", "client_id", h.clientID,
				"api_key", h.key, "api_version", h.version, "err", err)
			return
		}
		if err := c.admit(h); err != nil {
			c.log.Info("kafka connection closed", "client_id", h.clientID, "err", err)
			return
		}
		if !c.run(&request{ctx: c.rctx, c: c, hdr: h, kreq: kreq, done: make(chan struct{})}) {
			return
		}
	}
}

// frameLimit is the largest frame the connection may send next: before it
// is admitted (under --auth required, until it logs in), or when the frame
// is a bare SASL token, Config.MaxPreAuthRequestBytes, so that a client
// nobody knows yet cannot make the listener buffer a large request.
func (c *conn) frameLimit() int {
	if !c.sess.admitted || (c.sess.x != nil && c.sess.legacy) {
		return min(c.s.cfg.MaxRequestBytes, c.s.cfg.MaxPreAuthRequestBytes)
	}
	return c.s.cfg.MaxRequestBytes
}

// open completes the TLS handshake and identifies the connection from its
// certificate; false closes it.
func (c *conn) open() bool {
	if err := c.handshakeTLS(); err != nil {
		c.log.Info("kafka connection closed", "err", err)
		return false
	}
	if err := c.identify(auth.Principal{}); err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		c.log.Info("kafka connection closed: not admitted", "err", err)
		return false
	}
	return true
}

// run enqueues r and starts it; false ends the connection (closed, or r
// ends it: a handler panic or a refused login).
func (c *conn) run(r *request) bool {
	if !c.enqueue(r) {
		return false
	}
	finish, ok := c.start(r)
	if !ok {
		return false
	}
	// Read before finish runs: a panic in finish sets fatal concurrently.
	fatal := r.fatal != nil
	go c.finish(r, finish)
	return !fatal
}

// legacyToken answers one bare SASL token of a SaslHandshake v0 exchange.
// A failure closes the connection without an answer: v0 has no way to say
// why (Kafka does the same).
func (c *conn) legacyToken(body []byte) bool {
	out, err := c.stepSASL(body)
	if err != nil {
		c.logFatal(&request{fatal: err})
		return false
	}
	r := &request{ctx: c.rctx, c: c, token: out, isToken: true, done: make(chan struct{})}
	close(r.done)
	return c.enqueue(r)
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, errMalformed):
		c.log.Warn("kafka connection closed: malformed request", "err", err)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.log.Debug("kafka connection closed: idle", "timeout", c.s.cfg.IdleTimeout)
			return
		}
		c.log.Debug("kafka connection closed", "err", err)
	}
}

// enqueue appends r to the requests to answer; it blocks while the
// connection has MaxInFlight requests outstanding.
func (c *conn) enqueue(r *request) bool {
	select {
	case c.pending <- r:
		return true
	case <-c.ctx.Done():
		close(r.done)
		return false
	}
}

// answered is a request whose response is already known.
func (c *conn) answered(h header, resp kmsg.Response) *request {
	r := &request{ctx: c.ctx, c: c, hdr: h, resp: resp, done: make(chan struct{})}
	close(r.done)
	return r
}

// start runs the handler's synchronous part. A panic there is a bug; it
// closes this connection and is logged with its stack, never taking the
// server down.
func (c *conn) start(r *request) (finish func() kmsg.Response, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("kafka connection closed: handler panicked", "api_key", r.hdr.key,
				"api_version", r.hdr.version, "panic", p, "stack", string(debug.Stack()))
			r.fatal = errors.New("handler panicked")
			close(r.done)
			ok = false
		}
	}()
	return apis[r.hdr.key].handle(c.s, r), true
}

func (c *conn) finish(r *request, finish func() kmsg.Response) {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("kafka connection closed: handler panicked", "api_key", r.hdr.key,
				"api_version", r.hdr.version, "panic", p, "stack", string(debug.Stack()))
			r.resp, r.fatal = nil, errors.New("handler panicked")
		}
	}()
	r.resp = finish()
}

// logFatal logs why a request closes the connection; a failed login's
// reason (which its answer does not tell the client) goes to the log only.
func (c *conn) logFatal(r *request) {
	args := []any{"client_id", r.hdr.clientID, "api_key", r.hdr.key, "err", r.fatal}
	var ae *auth.AuthenticationError
	if errors.As(r.fatal, &ae) {
		c.log.Info("kafka connection closed: SASL authentication failed", append(args, "reason", ae.Reason())...)
		return
	}
	c.log.Warn("kafka connection closed", args...)
}

// write answers the pending requests in order. After a write error or a
// fatal request it keeps draining (without writing) so that every request's
// afterWrite runs and the reader is never left blocked.
func (c *conn) write() {
	var buf []byte
	dead := false
	for r := range c.pending {
		<-r.done
		if (r.resp != nil || r.isToken) && !dead {
			if r.isToken {
				buf = appendToken(buf[:0], r.token)
			} else {
				buf = appendResponse(buf[:0], r.hdr.corr, r.resp)
			}
			if err := c.send(buf); err != nil {
				c.logWriteError(err)
				dead = true
			}
		}
		if r.afterWrite != nil {
			r.afterWrite()
		}
		if r.fatal != nil && !dead {
			c.logFatal(r)
			dead = true
		}
		if dead {
			c.cancel()
			c.nc.Close()
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin one large fetch's buffer for the connection's life
		}
	}
}

// writeChunk is what a client must read of a response within
// Config.WriteTimeout.
const writeChunk = 256 << 10

// send writes a frame, writeChunk bytes at a time, each within
// Config.WriteTimeout: a client that stops reading its responses is
// disconnected instead of holding them (and their memory) for the
// connection's idle timeout.
func (c *conn) send(buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), writeChunk)
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
		if _, err := c.nc.Write(buf[:n]); err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

func (c *conn) logWriteError(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.log.Info("kafka connection closed: the client did not read its responses", "write_timeout", c.s.cfg.WriteTimeout)
		return
	}
	c.log.Debug("kafka connection closed: write failed", "err", err)
}

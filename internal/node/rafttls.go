package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
)

// raftHandshakeTimeout bounds a Raft connection's TLS handshake and its
// first bytes, as the transport bounds its header.
const raftHandshakeTimeout = 5 * time.Second

// setupRaftTLS puts mutual TLS (Config.RaftTLS, --raft-tls-*) on the Raft
// port: it wraps the cluster's Raft listener and dialer, below the
// transport, so every Raft byte in either direction travels over a
// connection both of whose ends showed a certificate from the cluster CA.
func (n *Node) setupRaftTLS() error {
	f := n.cfg.RaftTLS
	if f.CertFile == "" && f.KeyFile == "" && f.CAFile == "" {
		return nil
	}
	if n.cfg.Cluster == nil {
		return errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca need cluster mode (--node-id, --raft-addr)")
	}
	if f.CertFile == "" || f.KeyFile == "" || f.CAFile == "" {
		return errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca go together: Raft TLS is always mutual, so give all three")
	}
	f.OnReloadError = func(err error) {
		n.logger.Error("Raft TLS files changed but do not load; the previous certificate keeps serving", "err", err)
	}
	r, err := tlsconfig.NewRaft(f)
	if err != nil {
		return fmt.Errorf("--raft-tls-*: %w", err)
	}
	cc := *n.cfg.Cluster
	ln := cc.RaftListener
	if ln == nil {
		if ln, err = net.Listen("tcp", cc.RaftAddr); err != nil {
			return listenError("--raft-addr", cc.RaftAddr, err)
		}
	}
	n.raftLn = newRaftTLSListener(ln, r.ServerConfig(), n.logger)
	cc.RaftListener = n.raftLn
	cc.RaftDial = raftTLSDial(cc.RaftDialer(), r)
	n.cfg.Cluster, n.raftTLS = &cc, r
	return nil
}

// raftTLSDial completes the TLS handshake of every Raft connection before
// the transport writes its header: the peer's certificate must come from
// the cluster CA and name the host of the address dialled.
func raftTLSDial(base func(context.Context, string) (net.Conn, error), r *tlsconfig.Raft) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("raft address %q: %w", addr, err)
		}
		c, err := base(ctx, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, r.ClientConfig(host))
		hctx, cancel := context.WithTimeout(ctx, raftHandshakeTimeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("raft TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// raftTLSListener is the Raft listener under mutual TLS. Each accepted
// connection completes its handshake in its own goroutine (a slow or
// hostile peer holds up no other), and reaches the transport only once the
// peer's certificate has been verified against the cluster CA. A connection
// that closes right after its handshake is dropped quietly.
type raftTLSListener struct {
	inner net.Listener
	cfg   *tls.Config
	log   *slog.Logger
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu      sync.Mutex
	pending map[net.Conn]struct{} // handshaking; closed by Close
}

func newRaftTLSListener(inner net.Listener, cfg *tls.Config, log *slog.Logger) *raftTLSListener {
	l := &raftTLSListener{inner: inner, cfg: cfg, log: log, conns: make(chan net.Conn),
		done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *raftTLSListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *raftTLSListener) Addr() net.Addr { return l.inner.Addr() }

// Close stops accepting, closes the connections still handshaking and
// waits for the listener's goroutines.
func (l *raftTLSListener) Close() error {
	err := l.shutdown()
	l.wg.Wait()
	return err
}

func (l *raftTLSListener) shutdown() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
		err = l.inner.Close()
	})
	return err
}

func (l *raftTLSListener) acceptLoop() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				l.shutdown()
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.log.Warn("Raft port: accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			c.Close()
			return
		default:
		}
		l.pending[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(c)
	}
}

// handshake verifies the peer and hands the connection to Accept, with
// the first bytes it read put back.
func (l *raftTLSListener) handshake(c net.Conn) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		delete(l.pending, c)
		l.mu.Unlock()
	}()
	c.SetDeadline(time.Now().Add(raftHandshakeTimeout))
	tc := tls.Server(c, l.cfg)
	if err := tc.Handshake(); err != nil {
		l.log.Warn("Raft connection refused: no valid certificate from the cluster CA (--raft-tls-ca)",
			"remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(tc, first); err != nil {
		l.log.Debug("Raft connection closed after its TLS handshake", "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	select {
	case l.conns <- &replayConn{Conn: tc, first: first}:
	case <-l.done:
		c.Close()
	}
}

// replayConn is a connection whose first bytes were read ahead; Read
// returns them first.
type replayConn struct {
	net.Conn
	first []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

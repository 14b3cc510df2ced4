package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// Defaults for Config's limits.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxPreAuthRequestBytes bounds a request before the connection
	// has authenticated (Kafka's sasl.server.max.receive.size).
	DefaultMaxPreAuthRequestBytes = 512 << 10
	// DefaultMaxInFlight bounds the requests one connection may have
	// outstanding (Kafka clients pipeline at most 5 produces by default).
	DefaultMaxInFlight = 16
	// DefaultMaxConnFetchBytes bounds the fetch responses one connection
	// holds unwritten: two of the largest.
	DefaultMaxConnFetchBytes = 2 * broker.MaxFetchBytes
	// DefaultWriteTimeout disconnects a client that leaves a response
	// unread this long (Kafka clients' request.timeout.ms is 30 s).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxConns bounds the open connections of one listener.
	DefaultMaxConns = 4096
	// DefaultHandshakeTimeout bounds a connection's TLS handshake.
	DefaultHandshakeTimeout = 10 * time.Second
)

// Config configures a Server.
type Config struct {
	// Core is the node's core; required.
	Core Core
	// AdvertisedAddr is the HOST:PORT Metadata and FindCoordinator give
	// clients for this node; empty means the listener's address.
	AdvertisedAddr string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// MaxRequestBytes bounds one request frame; a larger one closes the
	// connection. Default DefaultMaxRequestBytes.
	MaxRequestBytes int
	// MaxPreAuthRequestBytes bounds one request frame of a connection that
	// is not admitted yet (under --auth required, one that has not logged
	// in), and a bare SASL token; a larger one closes the connection.
	// Default DefaultMaxPreAuthRequestBytes.
	MaxPreAuthRequestBytes int
	// MaxInFlight bounds the requests one connection has outstanding.
	MaxInFlight int
	// MaxConnFetchBytes bounds the bytes of fetch responses one
	// connection holds, read and not yet written; a fetch beyond it waits
	// for earlier responses to be written (one larger than it runs alone).
	// Default DefaultMaxConnFetchBytes.
	MaxConnFetchBytes int
	// WriteTimeout closes a connection whose client reads less than 256
	// KiB of a response in this long. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing for this long.
	IdleTimeout time.Duration
	// MaxConns bounds open connections; more are closed on accept.
	MaxConns int
	// TLS, when set, serves the listener over TLS (the node's
	// tlsconfig.Server, which re-reads its files): every connection
	// handshakes before its first request, and a verified client
	// certificate names the connection's principal (User:<CN>).
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Gate is the node's authentication policy (--auth and the users):
	// SaslHandshake and SaslAuthenticate log in through its Authenticator
	// (nil: SASL is refused), and it decides each connection's principal.
	// The zero Gate is --auth none: every connection is anonymous.
	Gate auth.Gate
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxPreAuthRequestBytes <= 0 {
		c.MaxPreAuthRequestBytes = DefaultMaxPreAuthRequestBytes
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxConnFetchBytes <= 0 {
		c.MaxConnFetchBytes = DefaultMaxConnFetchBytes
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return c
}

// Server is a Kafka protocol listener over a Core.
type Server struct {
	cfg    Config
	core   Core
	log    *slog.Logger
	ln     net.Listener
	host   string // advertised host and port
	port   int32
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

// Listen opens the listener on addr (HOST:PORT; port 0 picks one) and
// starts serving, over TLS when Config.TLS is set. Close stops it.
func Listen(addr string, cfg Config) (*Server, error) {
	if cfg.Core == nil {
		return nil, errors.New("kafka: Config.Core is required")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kafka: listen on %s: %w", addr, err)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	s, err := newServer(ln, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func newServer(ln net.Listener, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	adv := cfg.AdvertisedAddr
	if adv == "" {
		adv = ln.Addr().String()
	}
	host, port, err := splitHostPort(adv)
	if err != nil {
		return nil, fmt.Errorf("kafka: advertised address %q: %w", adv, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg, core: cfg.Core, log: cfg.Logger.With("component", "kafka"),
		ln: ln, host: host, port: port, ctx: ctx, cancel: cancel,
		conns: make(map[*conn]struct{}),
	}, nil
}

func splitHostPort(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return host, int32(port), nil
}

// Addr is the address the listener accepts on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// AdvertisedAddr is the HOST:PORT clients are told to use for this node.
func (s *Server) AdvertisedAddr() string {
	return net.JoinHostPort(s.host, strconv.Itoa(int(s.port)))
}

// Close stops accepting, closes every connection, and waits for every
// goroutine the server started.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := s.ln.Close()
	// Connections close before the requests' context ends, so that nothing
	// answered by the cancellation reaches a client.
	for _, c := range conns {
		c.nc.Close()
	}
	s.cancel()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	var warned time.Time // the last warning about a refused connection
	warn := func(msg string, args ...any) {
		if time.Since(warned) >= 10*time.Second {
			warned = time.Now()
			s.log.Warn(msg, args...)
		}
	}
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: the connections that close free
				// some; the listener must outlive the shortage.
				warn("kafka listener cannot accept: out of file descriptors (lower --max-connections or raise ulimit -n)", "err", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("kafka listener stopped", "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.closed || len(s.conns) >= s.cfg.MaxConns {
			full := !s.closed
			s.mu.Unlock()
			if full {
				warn("kafka connections refused: the connection limit is reached (raise --max-connections, or find the client that opens so many)",
					"remote", nc.RemoteAddr(), "max", s.cfg.MaxConns)
			}
			nc.Close()
			continue
		}
		c := newConn(s, nc)
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

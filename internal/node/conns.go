package node

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connection limits. The HTTP port (/metrics, /healthz, /readyz, pprof)
// has a cap of its own, not a share of the API's: it serves scrapers and
// probes, a handful of connections, and a flood of idle HTTP connections
// must not take the API's slots (nor the other way round).
const (
	// DefaultMaxConnections caps the API's open client connections.
	DefaultMaxConnections = 4096
	// DefaultMaxHTTPConnections caps the HTTP port's open connections.
	DefaultMaxHTTPConnections = 128
	// httpIdleTimeout closes keep-alive HTTP connections idle this long.
	httpIdleTimeout = 30 * time.Second
	// httpProbeReserve is how many connections the HTTP port accepts past
	// --max-http-connections for /healthz, /readyz and /metrics only (one
	// request each, then closed): live tails hold their connections for
	// as long as they are open, and a port full of them must still answer
	// the probes, or a liveness probe restarts a healthy node.
	httpProbeReserve = 8
)

// connectionCaps returns the caps to apply to the API's and the HTTP
// port's connections: those asked for, lowered when together they would
// leave too few of the process's descriptors (RLIMIT_NOFILE) for segment
// files, indexes, Pebble and Raft: a quarter of the limit, at least 64, is
// kept for them.
func connectionCaps(api, http int, logger *slog.Logger) (int, int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return api, http
	}
	return capsWithin(int(lim.Cur), api, http, logger)
}

func capsWithin(nofile, api, http int, logger *slog.Logger) (int, int) {
	reserve := max(64, nofile/4)
	avail := nofile - reserve
	if api+http <= avail {
		return api, http
	}
	h := min(http, max(4, avail/16))
	a := max(min(api, avail-h), 1)
	logger.Warn("lowering the connection caps to keep descriptors for files (raise the limit with ulimit -n, or lower --max-connections)",
		"nofile", nofile, "reserved_for_files", reserve, "max_connections", a, "max_http_connections", h)
	return a, h
}

// capListener caps the connections open at once: past max, a new
// connection is closed as soon as it is accepted (the client sees it reset
// and gets UNAVAILABLE; the Go client retries), so a flood of connections
// cannot exhaust the node's file descriptors or memory while the
// connections already open keep being served. Accept never blocks on the
// cap, so the kernel's backlog does not fill with connections nobody
// answers.
type capListener struct {
	net.Listener
	max int64
	// reserve connections are accepted past max, marked reserved (the
	// HTTP port serves only its probes on them).
	reserve  int64
	open     atomic.Int64
	rejected prometheus.Counter
	logger   func(open int64)
	lastLog  atomic.Int64 // unix nanos of the last warning
}

func newCapListener(l net.Listener, max int, rejected prometheus.Counter, warn func(open int64)) *capListener {
	return &capListener{Listener: l, max: int64(max), rejected: rejected, logger: warn}
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		if n > l.max {
			if now := time.Now().UnixNano(); now-l.lastLog.Load() > int64(10*time.Second) {
				l.lastLog.Store(now)
				l.logger(n - 1)
			}
		}
		if n > l.max+l.reserve {
			l.open.Add(-1)
			conn.Close()
			l.rejected.Inc()
			continue
		}
		return &cappedConn{Conn: conn, l: l, reserved: n > l.max}, nil
	}
}

// Open is the number of connections open now.
func (l *capListener) Open() int64 { return l.open.Load() }

type cappedConn struct {
	net.Conn
	l        *capListener
	reserved bool // accepted past max, into the reserve
	once     sync.Once
}

// reservedConn reports whether c (or the connection under its TLS) was
// accepted into a capListener's reserve.
func reservedConn(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, ok := c.(*cappedConn)
	return ok && cc.reserved
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

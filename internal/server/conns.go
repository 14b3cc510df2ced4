package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConnections caps the API's open client connections.
const DefaultMaxConnections = 4096

// capListener caps the connections open at once: past max, a new
// connection is closed as soon as it is accepted (the client sees it reset
// and gets UNAVAILABLE; the Go client retries), so a flood of connections
// cannot exhaust the node's file descriptors or memory while the
// connections already open keep being served. Accept never blocks on the
// cap, so the kernel's backlog does not fill with connections nobody
// answers.
type capListener struct {
	net.Listener
	max      int64
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
		if n := l.open.Add(1); n > l.max {
			l.open.Add(-1)
			conn.Close()
			l.rejected.Inc()
			if now := time.Now().UnixNano(); now-l.lastLog.Load() > int64(10*time.Second) {
				l.lastLog.Store(now)
				l.logger(n - 1)
			}
			continue
		}
		return &cappedConn{Conn: conn, l: l}, nil
	}
}

// Open is the number of connections open now.
func (l *capListener) Open() int64 { return l.open.Load() }

type cappedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

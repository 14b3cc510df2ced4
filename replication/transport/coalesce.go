package transport

import (
	"encoding/binary"
	"net"
)

// yamux frame header: version (1 byte), type (1), flags (2), stream id (4),
// length (4); a data frame's body (length bytes) follows it.
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
)

// coalescedConn is the connection under a yamux session. yamux's writer
// (one goroutine per session, the only one writing) writes each frame's
// header and body with two Writes, so two syscalls for every Raft RPC
// frame; coalescedConn holds a data frame's header back and writes it with
// the body that follows, in one write. Every other write (window
// updates, pings, go-aways: headers without a body) goes out at once, as
// does a held header before anything that is not its body, so nothing is
// ever held past the next Write and no frame waits on a timer.
type coalescedConn struct {
	net.Conn
	hdr  [yamuxHeaderSize]byte
	held bool
	buf  []byte      // header and a small body, copied
	bufs net.Buffers // header and a large body: writev on a TCP connection
}

// coalesceCopyMax: a body up to this size is copied behind its header into
// one buffer (one Write on any connection); a larger one goes with the
// header as net.Buffers (one writev on a TCP connection, two Writes on
// others).
const coalesceCopyMax = 64 << 10

func newCoalescedConn(c net.Conn) *coalescedConn { return &coalescedConn{Conn: c} }

func (c *coalescedConn) Write(p []byte) (int, error) {
	if c.held {
		c.held = false
		var n int64
		var err error
		if len(p) <= coalesceCopyMax {
			c.buf = append(append(c.buf[:0], c.hdr[:]...), p...)
			var m int
			m, err = c.Conn.Write(c.buf)
			n = int64(m)
		} else {
			c.bufs = append(c.bufs[:0], c.hdr[:], p)
			n, err = c.bufs.WriteTo(c.Conn)
			c.bufs = c.bufs[:0]
		}
		return max(0, int(n)-yamuxHeaderSize), err
	}
	if len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(c.hdr[:], p)
		c.held = true
		return len(p), nil
	}
	return c.Conn.Write(p)
}

package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/log"
	"github.com/logd/logd/replication/raftrpc"
	"github.com/logd/logd/replication/transport"
)

// Segment copy: a follower whose log cannot continue at the snapshot the
// leader installs (it fell behind the leader's log start) copies the
// leader's segments up to the snapshot's index instead of replaying
// history through Raft. The copy runs over the group's own stream on the
// node's one Raft port, which also carries the group's InstallSnapshot
// RPCs: its first byte, copyMagic, is not raftrpc.SnapshotMagic, so
// copyStream, wrapped around the group's stream layer, tells the two apart
// on accept.
//
// Request (follower -> leader), after copyMagic:
//
//	0 1 version   1
//	1 8 through   Raft index the copy must reach (the snapshot's)
//
// Response:
//
//	0 1 status    0: ok, 1: error (then 2-byte length and message)
//	1 8 start     the leader's log start offset
//	9 4 count     segments that follow
//	then per segment:
//	  0 8 base offset
//	  8 8 size      bytes that follow
//	 16 … bytes     the segment file as stored
//	  … 4 CRC-32C   (Castagnoli) of the bytes
//
// The leader sends every segment holding an entry at or below through,
// whole; the follower stages each (log.Install verifies every entry),
// keeps the entries up to through, checks the staged end is the snapshot's
// (offset and index) and commits. A follower that gets no segment (the
// leader trimmed everything up to through) restarts its log empty at the
// snapshot (log.ResetTo).
const (
	copyMagic   byte = 0xC5
	copyVersion byte = 1
	copyOK      byte = 0
	copyFailed  byte = 1

	copyChunk       = 256 << 10
	copyIdleTimeout = 30 * time.Second
	copyDialTimeout = 10 * time.Second
)

var copyCRC = crc32.MakeTable(crc32.Castagnoli)

// copyStream is a group's stream layer on the Mux: it serves segment copy
// requests and hands InstallSnapshot connections (raftrpc.SnapshotMagic)
// to the group's transport. Every other RPC of the group goes over the
// node's raftrpc links, not over this layer.
//
// It takes its connections from the Mux's routing goroutine
// (transport.Group.Serve), not from an accept loop of its own: a node
// holds thousands of groups, nearly all idle, and a goroutine per group
// waiting in Accept was one per replica for nothing, asleep or not (issue
// 19).
type copyStream struct {
	*transport.Group
	serve    func(net.Conn) // a segment copy request
	snapshot func(net.Conn) // an InstallSnapshot
	// mu orders handing a connection in (wg.Add) and Close, so that wait
	// waits for every connection handed in before Close.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newCopyStream(inner *transport.Group, serve, snapshot func(net.Conn)) *copyStream {
	s := &copyStream{Group: inner, serve: serve, snapshot: snapshot}
	inner.Serve(s.take)
	return s
}

// take classifies and serves a connection in the caller's goroutine; once
// the stream is closed it closes the connection instead.
func (s *copyStream) take(c net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	s.classify(c)
}

// classify reads a connection's first byte and serves a copy request or
// an InstallSnapshot; anything else (a node of an older version) is
// closed.
func (s *copyStream) classify(c net.Conn) {
	defer s.wg.Done()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	switch b[0] {
	case copyMagic:
		s.serve(c)
	case raftrpc.SnapshotMagic:
		s.snapshot(c)
	}
	c.Close()
}

// Close closes the inner layer, and with it every connection, failing
// the copies being served (wait waits for them).
func (s *copyStream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	return s.Group.Close()
}

// wait waits for the copies being served; after Close.
func (s *copyStream) wait() { s.wg.Wait() }

// idleConn sets a deadline before every read and write: a peer that stops
// answering fails the copy instead of hanging it.
type idleConn struct{ net.Conn }

func (c idleConn) Read(b []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(copyIdleTimeout))
	return c.Conn.Read(b)
}

func (c idleConn) Write(b []byte) (int, error) {
	c.SetWriteDeadline(time.Now().Add(copyIdleTimeout))
	return c.Conn.Write(b)
}

// serveCopy answers one copy request from l (the leader's log).
func serveCopy(c net.Conn, l *log.Log, logger hclog.Logger) {
	conn := idleConn{c}
	r := bufio.NewReader(conn)
	var req [9]byte
	if _, err := io.ReadFull(r, req[:]); err != nil {
		return
	}
	w := bufio.NewWriterSize(conn, copyChunk)
	fail := func(err error) {
		logger.Warn("segment copy refused", "remote", c.RemoteAddr(), "error", err)
		msg := err.Error()
		msg = msg[:min(len(msg), 1<<10)]
		w.WriteByte(copyFailed)
		w.Write(binary.BigEndian.AppendUint16(nil, uint16(len(msg))))
		w.WriteString(msg)
		w.Flush()
	}
	if req[0] != copyVersion {
		fail(fmt.Errorf("segment copy version %d, want %d", req[0], copyVersion))
		return
	}
	through := binary.BigEndian.Uint64(req[1:])
	if last := l.LastIndex(); last < through {
		fail(fmt.Errorf("segment copy through index %d: this log ends at %d", through, last))
		return
	}
	var segs []log.SegmentInfo
	for _, s := range l.Segments() {
		if s.Entries > 0 && s.FirstIndex <= through {
			segs = append(segs, s)
		}
	}
	start := l.StartOffset()
	if len(segs) > 0 {
		start = segs[0].BaseOffset
	}
	hdr := []byte{copyOK}
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(start))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(segs)))
	if _, err := w.Write(hdr); err != nil {
		return
	}
	t0 := time.Now()
	var total int64
	for _, s := range segs {
		n, err := sendSegment(w, l, s.BaseOffset)
		total += n
		if err != nil {
			// Retention may have deleted it since the listing; the
			// follower sees the connection end and retries later.
			logger.Warn("segment copy aborted", "remote", c.RemoteAddr(), "segment", s.BaseOffset, "error", err)
			return
		}
	}
	if err := w.Flush(); err == nil {
		logger.Info("segments copied to a follower", "remote", c.RemoteAddr(), "segments", len(segs), "bytes", total, "duration", time.Since(t0))
	}
}

func sendSegment(w io.Writer, l *log.Log, base int64) (int64, error) {
	r, err := l.OpenSegment(base)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	hdr := binary.BigEndian.AppendUint64(nil, uint64(base))
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(r.Size()))
	if _, err := w.Write(hdr); err != nil {
		return 0, err
	}
	h := crc32.New(copyCRC)
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(r, 0, r.Size()), make([]byte, copyChunk))
	if err != nil {
		return n, err
	}
	if n != r.Size() {
		return n, fmt.Errorf("segment %d: read %d of %d bytes", base, n, r.Size())
	}
	_, err = w.Write(binary.BigEndian.AppendUint32(nil, h.Sum32()))
	return n, err
}

// copyResult is what a catch-up copied.
type copyResult struct {
	Segments int
	Bytes    int64
}

// fetchSegments copies the leader's segments through Raft index through
// into l, which must then end at offset next (the snapshot's high
// watermark) and index through: the follower's log holds the leader's
// entries at the leader's offsets and indexes, and Raft goes on at
// through+1. On any failure l is left as it was.
func fetchSegments(ctx context.Context, stream raft.StreamLayer, leader raft.ServerAddress, l *log.Log, through uint64, next int64) (copyResult, error) {
	var res copyResult
	c, err := stream.Dial(leader, copyDialTimeout)
	if err != nil {
		return res, fmt.Errorf("dial leader %s: %w", leader, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	conn := idleConn{c}
	req := []byte{copyMagic, copyVersion}
	if _, err := conn.Write(binary.BigEndian.AppendUint64(req, through)); err != nil {
		return res, err
	}
	r := bufio.NewReaderSize(conn, copyChunk)
	var hdr [13]byte
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return res, err
	}
	if hdr[0] != copyOK {
		var n [2]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return res, err
		}
		msg := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(r, msg); err != nil {
			return res, err
		}
		return res, fmt.Errorf("leader %s: %s", leader, msg)
	}
	if _, err := io.ReadFull(r, hdr[1:]); err != nil {
		return res, err
	}
	count := binary.BigEndian.Uint32(hdr[9:])
	if count == 0 {
		return res, l.ResetTo(next, through+1)
	}
	in, err := l.BeginInstall()
	if err != nil {
		return res, err
	}
	if err := receiveSegments(ctx, r, in, count, through, &res); err != nil {
		in.Abort()
		return res, err
	}
	if gotNext, gotIndex := in.End(); gotNext != next || gotIndex != through+1 {
		in.Abort()
		return res, fmt.Errorf("%w: the copied segments end at offset %d, index %d; the snapshot at offset %d, index %d",
			ErrOffsetGap, gotNext, gotIndex-1, next, through)
	}
	if err := ctx.Err(); err != nil {
		in.Abort()
		return res, err
	}
	return res, in.Commit()
}

// stagedHook, when set (tests), is called after each segment a catch-up
// staged.
var stagedHook atomic.Pointer[func(ctx context.Context, staged int)]

func receiveSegments(ctx context.Context, r io.Reader, in *log.Install, count uint32, through uint64, res *copyResult) error {
	for range count {
		if err := ctx.Err(); err != nil {
			return err
		}
		var sh [16]byte
		if _, err := io.ReadFull(r, sh[:]); err != nil {
			return err
		}
		base, size := int64(binary.BigEndian.Uint64(sh[:])), int64(binary.BigEndian.Uint64(sh[8:]))
		if base < 0 || size < 0 {
			return fmt.Errorf("%w: segment copy header: base %d, size %d", log.ErrCorrupt, base, size)
		}
		h := crc32.New(copyCRC)
		src := &countingReader{r: io.TeeReader(io.LimitReader(r, size), h)}
		_, err := in.AddSegment(base, src, through)
		// AddSegment reads src to its end unless it failed.
		if err == nil && src.n != size {
			err = fmt.Errorf("segment %d: received %d of %d bytes", base, src.n, size)
		}
		if err != nil {
			return err
		}
		var sum [4]byte
		if _, err := io.ReadFull(r, sum[:]); err != nil {
			return err
		}
		if got := binary.BigEndian.Uint32(sum[:]); got != h.Sum32() {
			return fmt.Errorf("%w: segment %d: crc32c %08x, sent %08x", log.ErrCorrupt, base, h.Sum32(), got)
		}
		res.Segments++
		res.Bytes += size
		if h := stagedHook.Load(); h != nil {
			(*h)(ctx, res.Segments)
		}
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// errNoLeader: a catch-up needs the leader's address, which Raft learns
// from the install itself; absent, the install is refused and retried.
var errNoLeader = errors.New("replication: no known leader to copy segments from")

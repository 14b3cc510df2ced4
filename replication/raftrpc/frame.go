package raftrpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// ChannelID is the Mux group id of the links.
const ChannelID = "_raftrpc"

// Frame constants (see the package doc).
const (
	preface      = "LDRP"
	version byte = 1

	rpcAppendEntries   byte = 0
	rpcRequestVote     byte = 1
	rpcInstallSnapshot byte = 2
	rpcTimeoutNow      byte = 3
	rpcRequestPreVote  byte = 4

	statusOK    byte = 0x80
	statusError byte = 0x81

	requestHeader  = 4 + 1 + 8 + 2
	responseHeader = 4 + 1 + 8

	// MaxFrame bounds a frame's length: a longer one closes the link.
	MaxFrame = 256 << 20
	// SnapshotMagic is the first byte of an InstallSnapshot connection on a
	// group's stream layer (never one of the segment copy's or Raft's).
	SnapshotMagic byte = 0xC6

	// keepBuffer: a link's read or write buffer grown past it for large
	// appends is dropped once they are through (a few per node: one per
	// link, not per group).
	keepBuffer = 1 << 20
	// keepWriteBuffer: a link's write buffer up to this size is kept
	// while the writes that grew it past keepBuffer go on (link.writeLoop).
	keepWriteBuffer = 16 << 20
)

// ErrBadFrame: the peer sent a frame this version cannot read; the link
// is closed.
var ErrBadFrame = errors.New("raftrpc: bad frame")

// ErrClosed: the transport or hub is closed.
var ErrClosed = errors.New("raftrpc: closed")

// ErrBusy: the group's inbound queue on the peer is full; Raft retries.
var ErrBusy = errors.New("raftrpc: group busy")

// RemoteError is an error the peer answered a call with.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return "raftrpc: peer: " + e.Msg }

var handle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = true // as NetworkTransport's default
	return h
}()

// appender is an io.Writer appending to a slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

type encoder struct {
	a   appender
	enc *codec.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = codec.NewEncoder(&e.a, handle)
	return e
}}

// appendMsgpack appends v, msgpack, to dst.
func appendMsgpack(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.a.b = dst
	e.enc.Reset(&e.a)
	err := e.enc.Encode(v)
	out := e.a.b
	e.a.b = nil
	encoders.Put(e)
	return out, err
}

// appendRequest appends a request frame to dst; dst is unchanged on error.
func appendRequest(dst []byte, typ byte, id uint64, group string, args any) ([]byte, error) {
	return appendRequestVec(dst, nil, typ, id, group, args)
}

// appendRequestVec is appendRequest that, with ext non-nil, leaves the
// large entries' bytes out of dst and appends them to *ext instead, as
// extents of the frame (vector.go); dst and *ext are unchanged on error.
func appendRequestVec(dst []byte, ext *[]extent, typ byte, id uint64, group string, args any) ([]byte, error) {
	start, startExt := len(dst), 0
	if ext != nil {
		startExt = len(*ext)
	}
	ae, empty := args.(*raft.AppendEntriesRequest)
	empty = empty && len(ae.Entries) == 0
	if empty {
		typ = rpcEmptyAppend
	}
	dst = append(dst, 0, 0, 0, 0, typ)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(group)))
	dst = append(dst, group...)
	if empty {
		return finishFrame(appendEmptyAppend(dst, ae), start)
	}
	if ae != nil {
		dst[start+4] = rpcAppend
		dst = slices.Grow(dst, appendSize(ae, ext != nil))
		dst = appendAppend(dst, ext, ae)
		if ext == nil {
			return finishFrame(dst, start)
		}
		dst, err := finishFrameVec(dst, start, extentBytes((*ext)[startExt:]))
		if err != nil {
			clear((*ext)[startExt:])
			*ext = (*ext)[:startExt]
		}
		return dst, err
	}
	dst, err := appendMsgpack(dst, args)
	if err != nil {
		return dst[:start], fmt.Errorf("raftrpc: encode request: %w", err)
	}
	return finishFrame(dst, start)
}

// appendSize estimates an append's encoded size, so that its frame is
// grown once; vec: without the entries left out as extents.
func appendSize(r *raft.AppendEntriesRequest, vec bool) int {
	n := 128
	for _, e := range r.Entries {
		n += 64 + len(e.Extensions)
		if !vec || len(e.Data) < minExtent {
			n += len(e.Data)
		}
	}
	return n
}

// appendResponse appends a response frame: resp, or err's text.
func appendResponse(dst []byte, id uint64, resp any, rerr error) ([]byte, error) {
	start := len(dst)
	status := statusOK
	ae, compact := resp.(*raft.AppendEntriesResponse)
	switch {
	case rerr != nil:
		status = statusError
	case compact && ae != nil:
		dst = append(dst, 0, 0, 0, 0, statusAppendOK)
		dst = binary.BigEndian.AppendUint64(dst, id)
		return finishFrame(appendAppendAnswer(dst, ae), start)
	}
	dst = append(dst, 0, 0, 0, 0, status)
	dst = binary.BigEndian.AppendUint64(dst, id)
	if rerr != nil {
		dst = append(dst, rerr.Error()...)
		return finishFrame(dst, start)
	}
	dst, err := appendMsgpack(dst, resp)
	if err != nil {
		return dst[:start], fmt.Errorf("raftrpc: encode response: %w", err)
	}
	return finishFrame(dst, start)
}

func finishFrame(dst []byte, start int) ([]byte, error) { return finishFrameVec(dst, start, 0) }

// finishFrameVec writes the length of the frame at dst[start:], whose
// extents hold ext bytes more.
func finishFrameVec(dst []byte, start, ext int) ([]byte, error) {
	n := len(dst) - start - 4 + ext
	if n > MaxFrame {
		return dst[:start], fmt.Errorf("raftrpc: frame of %d bytes over MaxFrame", n)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// frameReader reads frames from a link into one buffer, reused while
// frames are small.
type frameReader struct {
	r   io.Reader
	buf []byte
	dec *codec.Decoder
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, readBuffer), dec: codec.NewDecoderBytes(nil, handle)}
}

// readBuffer is a frame reader's buffer: the small frames (heartbeats,
// answers) of a link come in a few reads, not two each; a large frame's
// bytes past it are read straight into the frame.
const readBuffer = 32 << 10

// next reads one frame and returns its bytes after the length field,
// valid until the next call; at least min bytes long.
func (f *frameReader) next(min int) ([]byte, error) {
	if cap(f.buf) > keepBuffer {
		f.buf = nil
	}
	var l [4]byte
	if _, err := io.ReadFull(f.r, l[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(l[:]))
	if n > MaxFrame || n < min-4 {
		return nil, fmt.Errorf("%w: length %d", ErrBadFrame, n)
	}
	if cap(f.buf) < n {
		f.buf = make([]byte, n, max(n, 512))
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		return nil, err
	}
	return f.buf, nil
}

// decode decodes a msgpack payload into v.
func (f *frameReader) decode(payload []byte, v any) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: empty payload", ErrBadFrame)
	}
	f.dec.ResetBytes(payload)
	if err := f.dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return nil
}

// decodeAnswer decodes an answer's payload into resp.
func (f *frameReader) decodeAnswer(status byte, payload []byte, resp any) error {
	if status != statusAppendOK {
		return f.decode(payload, resp)
	}
	ae, ok := resp.(*raft.AppendEntriesResponse)
	if !ok {
		return fmt.Errorf("%w: an append answer to a %T", ErrBadFrame, resp)
	}
	return decodeAppendAnswer(payload, ae)
}

// request is a decoded request frame.
type request struct {
	typ   byte
	id    uint64
	group string
	cmd   any
}

// decodeRequest decodes a request frame (after its length field).
func (f *frameReader) decodeRequest(b []byte) (request, error) {
	req := request{typ: b[0], id: binary.BigEndian.Uint64(b[1:9])}
	n := int(binary.BigEndian.Uint16(b[9:11]))
	if len(b) < 11+n {
		return req, fmt.Errorf("%w: group id of %d bytes in a frame of %d", ErrBadFrame, n, len(b))
	}
	req.group = string(b[11 : 11+n])
	payload := b[11+n:]
	switch req.typ {
	case rpcEmptyAppend:
		var err error
		req.typ = rpcAppendEntries
		req.cmd, err = decodeEmptyAppend(payload)
		return req, err
	case rpcAppend:
		var err error
		req.typ = rpcAppendEntries
		req.cmd, err = decodeAppend(payload)
		// The entries are the buffer's bytes: the next frame is read
		// into a new one.
		f.buf = nil
		return req, err
	case rpcAppendEntries:
		req.cmd = &raft.AppendEntriesRequest{}
	case rpcRequestVote:
		req.cmd = &raft.RequestVoteRequest{}
	case rpcTimeoutNow:
		req.cmd = &raft.TimeoutNowRequest{}
	case rpcRequestPreVote:
		req.cmd = &raft.RequestPreVoteRequest{}
	default:
		return req, fmt.Errorf("%w: request type %d", ErrBadFrame, req.typ)
	}
	return req, f.decode(payload, req.cmd)
}

// isHeartbeat is hashicorp/raft's test (net_transport.go handleCommand).
func isHeartbeat(cmd any) bool {
	req, ok := cmd.(*raft.AppendEntriesRequest)
	if !ok {
		return false
	}
	addr := req.Addr
	if len(addr) == 0 {
		//lint:ignore SA1019 hashicorp/raft's own test reads it
		addr = req.Leader
	}
	return req.Term != 0 && addr != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// isEmptyAppend reports whether cmd is an AppendEntries without entries
// (a heartbeat or a commit notice): nothing waits on it but its sender's
// timers, so its frames may linger (link.queue).
func isEmptyAppend(cmd any) bool {
	req, ok := cmd.(*raft.AppendEntriesRequest)
	return ok && len(req.Entries) == 0
}

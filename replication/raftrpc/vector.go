package raftrpc

import (
	"encoding/binary"
	"net"
)

// Vectored writes. On a link whose connection writes a list of buffers
// with one system call (a direct TCP connection, transport.Mux.DirectGroup),
// an append's large entries are not copied into the link's pending buffer:
// the frame's other bytes are, and each large entry's Data is kept as an
// extent, its own bytes, written in place by writev. A leader so sends each
// entry to each follower from the bytes its log stored, without a copy.
//
// The pending frames are then the buffer with the extents inserted at
// their offsets, in order; every extent lies inside an append frame,
// after its entry's length field and before the fields after it, never in
// a frame's header.

// minExtent is the smallest entry Data written from its own bytes: below
// it, a copy costs less than a slot of the vector.
const minExtent = 4 << 10

// extent is b, written after the pending buffer's first at bytes.
type extent struct {
	at int
	b  []byte
}

func extentBytes(ext []extent) int {
	n := 0
	for _, x := range ext {
		n += len(x.b)
	}
	return n
}

// vectorWriter is a connection that writes buffers with one system call.
type vectorWriter interface {
	WriteBuffers(*net.Buffers) (int64, error)
	Vectored() bool
}

// vectorOf returns c as a vectorWriter, or nil when c does not write a
// vector with one call (a yamux stream, a TLS connection).
func vectorOf(c net.Conn) vectorWriter {
	if v, ok := c.(vectorWriter); ok && v.Vectored() {
		return v
	}
	return nil
}

// buffers appends to bufs the frames out with the extents ext inserted.
func buffers(bufs net.Buffers, out []byte, ext []extent) net.Buffers {
	prev := 0
	for _, x := range ext {
		if x.at > prev {
			bufs = append(bufs, out[prev:x.at])
		}
		bufs = append(bufs, x.b)
		prev = x.at
	}
	if prev < len(out) {
		bufs = append(bufs, out[prev:])
	}
	return bufs
}

// frameExtents returns how many of ext (those of the frame at frames[r:],
// the first at or after r) lie in that frame, and their bytes; n is the
// frame's length, extents included. An extent lies in the frame when it
// starts before the frame's end in frames, which is n less the bytes of
// the frame's extents: ext[j] is the frame's when it starts before n
// less the bytes of those before it and its own.
func frameExtents(ext []extent, r, n int) (count, bytes int) {
	for count < len(ext) && ext[count].at < r+n-bytes-len(ext[count].b) {
		bytes += len(ext[count].b)
		count++
	}
	return count, bytes
}

// keepFrames compacts frames and ext to the request frames keep reports
// true for (by request id); a trailing part that is not a whole request
// (cannot happen: start queues whole ones) is kept as it is.
func keepFrames(frames []byte, ext []extent, keep func(id uint64) bool) ([]byte, []extent) {
	w, ew := 0, 0
	move := func(from, to, shift int) { // keeps ext[from:to], shifted back by shift
		for ; from < to; from++ {
			ext[ew] = extent{at: ext[from].at - shift, b: ext[from].b}
			ew++
		}
	}
	e := 0
	for r := 0; r < len(frames); {
		n := 0
		if len(frames)-r >= requestHeader {
			n = 4 + int(binary.BigEndian.Uint32(frames[r:]))
		}
		count, bytes := frameExtents(ext[e:], r, n)
		size := n - bytes // the frame's bytes in frames
		if n < requestHeader || size < requestHeader || r+size > len(frames) {
			move(e, len(ext), r-w)
			w += copy(frames[w:], frames[r:])
			break
		}
		if keep(binary.BigEndian.Uint64(frames[r+5:])) {
			move(e, e+count, r-w)
			w += copy(frames[w:], frames[r:r+size])
		}
		e += count
		r += size
	}
	clear(ext[ew:])
	return frames[:w], ext[:ew]
}

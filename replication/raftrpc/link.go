package raftrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// link is one direction's connection to a peer: one writer goroutine
// draining every queued frame into one Write, and a reader (the caller's
// goroutine, readLoop).
//
// A link's writes have no deadline. A peer that reads slowly (a node
// starved of CPU) fills the stream's yamux window and the writer waits
// for it, while the calls queued behind fail one by one on their own
// timeout; a write deadline instead failed the link, and with it every
// group's calls to that peer at once, which then all retried together
// (on a starved machine, elections at 1,000 partitions never finished).
// A peer gone silent is noticed by the Mux session's keep-alive,
// which closes the stream and so fails the write; Close ends it too.
type link struct {
	c net.Conn

	mu      sync.Mutex
	pending []byte // frames queued, not yet written
	err     error  // set once, when the link failed
	wake    chan struct{}
	lazy    chan struct{} // wakes the writer after Linger
	done    chan struct{} // closed when the link failed
	onFail  func(error)
	// prune, when set, drops from a batch about to be written the frames
	// nobody waits for any more (client.dropEnded); set before writeLoop
	// starts.
	prune func([]byte) []byte
}

// Linger is how long the writer waits, after a lazy frame was queued (an
// empty AppendEntries, heartbeat or commit notice, and its answer), for
// more frames to write with it; any other frame is written at once, with
// the lazy ones queued before it.
const Linger = 5 * time.Millisecond

func newLink(c net.Conn, onFail func(error)) *link {
	return &link{
		c: c, onFail: onFail,
		wake: make(chan struct{}, 1), lazy: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// queue appends a frame with add and wakes the writer: at once, or after
// Linger when lazy.
func (l *link) queue(lazy bool, add func([]byte) ([]byte, error)) error {
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	b, err := add(l.pending)
	l.pending = b
	l.mu.Unlock()
	if err != nil {
		return err
	}
	wake := l.wake
	if lazy {
		wake = l.lazy
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop writes the queued frames until the link fails.
func (l *link) writeLoop() {
	var spare []byte
	small := 0 // writes in a row that used little of a large buffer
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		select {
		case <-l.wake:
		case <-l.lazy:
			linger.Reset(Linger)
			select {
			case <-l.wake:
				linger.Stop()
			case <-linger.C:
			case <-l.done:
				return
			}
		case <-l.done:
			return
		}
		l.mu.Lock()
		out := l.pending
		l.pending = spare[:0]
		l.mu.Unlock()
		if l.prune != nil {
			out = l.prune(out)
		}
		if len(out) == 0 {
			spare = out
			continue
		}
		if _, err := l.c.Write(out); err != nil {
			l.fail(fmt.Errorf("raftrpc: write to %s: %w", l.c.RemoteAddr(), err))
			return
		}
		spare, small = keepWritten(out, small)
	}
}

// keepWritten returns the buffer out, just written, emptied for reuse, or
// nil. A buffer grown past keepBuffer by large appends is kept while they
// go on (up to keepWriteBuffer): allocating and zeroing a new one per
// write cost a leader more than the copy into it. Once small writes are
// all it has held for a while (small counts them in a row), it is
// dropped, so an idle link holds no large buffer.
func keepWritten(out []byte, small int) ([]byte, int) {
	switch {
	case cap(out) <= keepBuffer:
		return out[:0], 0
	case cap(out) > keepWriteBuffer:
		return nil, 0
	case len(out) >= cap(out)/4:
		return out[:0], 0
	case small+1 >= keepSmallWrites:
		return nil, 0
	}
	return out[:0], small + 1
}

// keepSmallWrites: the small writes in a row after which a link drops a
// large write buffer.
const keepSmallWrites = 16

// fail closes the link with err (the first error wins).
func (l *link) fail(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	l.pending = nil
	close(l.done)
	l.mu.Unlock()
	l.c.Close()
	if l.onFail != nil {
		l.onFail(err)
	}
}

// respond queues the answer to request id (lazy: see queue).
func (l *link) respond(id uint64, lazy bool, r raft.RPCResponse) {
	err := l.queue(lazy, func(b []byte) ([]byte, error) { return appendResponse(b, id, r.Response, r.Error) })
	if err != nil && !errors.Is(err, ErrClosed) {
		select {
		case <-l.done:
		default:
			// An answer that does not encode: the caller's call times out.
			l.fail(err)
		}
	}
}

// call is a request waiting for its answer.
type call struct {
	resp     any        // decoded into by the reader
	done     chan error // gets one value
	deadline time.Time
}

// client is the outgoing link to one peer: requests out, answers in.
type client struct {
	*link
	addr    string
	ready   chan struct{} // closed once dialed (or the dial failed: dialErr)
	dialErr error
	next    atomic.Uint64

	cmu   sync.Mutex
	calls map[uint64]*call
}

// start registers a call and queues its request; the answer (or error)
// arrives on done.
func (c *client) start(group string, typ byte, args, resp any, done chan error, timeout time.Duration) error {
	id := c.next.Add(1)
	c.cmu.Lock()
	if c.calls == nil {
		c.cmu.Unlock()
		return c.closedErr()
	}
	c.calls[id] = &call{resp: resp, done: done, deadline: time.Now().Add(timeout)}
	c.cmu.Unlock()
	err := c.queue(isEmptyAppend(args), func(b []byte) ([]byte, error) { return appendRequest(b, typ, id, group, args) })
	if err != nil && c.take(id) == nil {
		// The link failed meanwhile and answered the call.
		return <-done
	}
	return err
}

// do sends a request and waits for its answer.
func (c *client) do(group string, typ byte, args, resp any, timeout time.Duration) error {
	done := donePool.Get().(chan error)
	err := c.start(group, typ, args, resp, done, timeout)
	if err == nil {
		err = <-done
	}
	// done is empty and nobody sends on it any more: a call gets exactly
	// one value, from whoever takes it from calls, and start either
	// received it, or failed before or after registering it (then it took
	// it back itself).
	donePool.Put(done)
	return err
}

// donePool keeps do's answer channels: every Raft RPC of every group (a
// heartbeat several times a second per follower) made one, and in a
// burst over 10,000 partitions the allocations of the RPC path were
// most of the garbage collector's work.
var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

func (c *client) closedErr() error {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.err
	default:
		return ErrClosed
	}
}

// take removes and returns the pending call id (nil: none).
func (c *client) take(id uint64) *call {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	cl := c.calls[id]
	delete(c.calls, id)
	return cl
}

// failCalls answers every pending call with err; later calls fail at once.
func (c *client) failCalls(err error) {
	c.cmu.Lock()
	calls := c.calls
	c.calls = nil
	c.cmu.Unlock()
	for _, cl := range calls {
		cl.done <- err
	}
}

// expire fails the calls whose deadline passed.
func (c *client) expire(now time.Time) {
	var late []*call
	c.cmu.Lock()
	for id, cl := range c.calls {
		if now.After(cl.deadline) {
			late = append(late, cl)
			delete(c.calls, id)
		}
	}
	c.cmu.Unlock()
	for _, cl := range late {
		cl.done <- fmt.Errorf("raftrpc: %s: no answer in time: %w", c.addr, errTimeout)
	}
}

var errTimeout = errors.New("timeout")

// dropEnded removes from frames (whole requests, as start queues them)
// those whose call ended while they waited to be written: timed out, or
// failed. A peer slow to read (a starved node) would otherwise get, once
// it reads again, every retry of every group's votes queued meanwhile,
// all stale: at 3,000 partitions one link's queue grew to 6.6 MB of them.
func (c *client) dropEnded(frames []byte) []byte {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	w := 0
	for r := 0; r < len(frames); {
		n := 0
		if len(frames)-r >= requestHeader {
			n = 4 + int(binary.BigEndian.Uint32(frames[r:]))
		}
		if n < requestHeader || r+n > len(frames) {
			// Not a whole request (cannot happen: start queues whole
			// ones): kept as it is.
			w += copy(frames[w:], frames[r:])
			break
		}
		if _, ok := c.calls[binary.BigEndian.Uint64(frames[r+5:])]; ok {
			w += copy(frames[w:], frames[r:r+n])
		}
		r += n
	}
	return frames[:w]
}

// readLoop reads answers until the link fails.
func (c *client) readLoop() {
	fr := newFrameReader(c.c)
	for {
		b, err := fr.next(responseHeader)
		if err != nil {
			c.fail(readError(c.addr, err))
			return
		}
		status, id := b[0], binary.BigEndian.Uint64(b[1:9])
		payload := b[9:]
		if status != statusOK && status != statusError && status != statusAppendOK {
			c.fail(fmt.Errorf("%w: status %#x from %s", ErrBadFrame, status, c.addr))
			return
		}
		cl := c.take(id)
		if cl == nil {
			continue // its call timed out
		}
		if status == statusError {
			cl.done <- &RemoteError{Msg: string(payload)}
			continue
		}
		if err := fr.decodeAnswer(status, payload, cl.resp); err != nil {
			cl.done <- err
			c.fail(fmt.Errorf("raftrpc: answer from %s: %w", c.addr, err))
			return
		}
		cl.done <- nil
	}
}

func readError(addr string, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("raftrpc: %s closed the link: %w", addr, err)
	}
	return fmt.Errorf("raftrpc: read from %s: %w", addr, err)
}

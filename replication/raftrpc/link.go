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
// draining every queued frame into one Write (or writev, vector.go), and
// a reader (the caller's goroutine, readLoop).
//
// A link's writes have no deadline. A peer that reads slowly (a node
// starved of CPU) fills the connection's window and the writer waits for
// it, while the calls queued behind fail one by one on their own timeout;
// a write deadline instead failed the link, and with it every group's
// calls to that peer at once, which then all retried together (on a
// starved machine, elections at 1,000 partitions never finished). A peer
// gone silent is noticed by client.expire (Config.Silence), or on a
// stream of a session by its keep-alive, which closes the connection and
// so fails the write; Close ends it too.
type link struct {
	c   net.Conn
	vec vectorWriter // c, when it writes a vector in one call; else nil

	mu      sync.Mutex
	pending []byte   // frames queued, not yet written
	ext     []extent // the large entries of pending's frames (vector.go)
	err     error    // set once, when the link failed
	wake    chan struct{}
	lazy    chan struct{} // wakes the writer after Linger
	done    chan struct{} // closed when the link failed
	onFail  func(error)
	// prune, when set, drops from a batch about to be written the frames
	// nobody waits for any more (client.dropEnded); set before writeLoop
	// starts.
	prune func([]byte, []extent) ([]byte, []extent)
}

// Linger is how long the writer waits, after a lazy frame was queued (an
// empty AppendEntries, heartbeat or commit notice, and its answer), for
// more frames to write with it; any other frame is written at once, with
// the lazy ones queued before it.
const Linger = 5 * time.Millisecond

func newLink(c net.Conn, onFail func(error)) *link {
	return &link{
		c: c, vec: vectorOf(c), onFail: onFail,
		wake: make(chan struct{}, 1), lazy: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// queue appends a frame with add and wakes the writer: at once, or after
// Linger when lazy. add is given the pending extents when the link writes
// vectors, else nil.
func (l *link) queue(lazy bool, add func([]byte, *[]extent) ([]byte, error)) error {
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	var ext *[]extent
	if l.vec != nil {
		ext = &l.ext
	}
	b, err := add(l.pending, ext)
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
	var spareExt []extent
	var bufs net.Buffers
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
		out, ext := l.pending, l.ext
		l.pending, l.ext = spare[:0], spareExt[:0]
		l.mu.Unlock()
		if l.prune != nil {
			out, ext = l.prune(out, ext)
		}
		if len(out) == 0 {
			spare, spareExt = out, ext
			continue
		}
		var err error
		if len(ext) == 0 {
			_, err = l.c.Write(out)
		} else {
			bufs = buffers(bufs[:0], out, ext)
			all := bufs
			_, err = l.vec.WriteBuffers(&all)
			clear(bufs[:cap(bufs)]) // the entries' bytes are not held
			clear(ext)              // past their write
		}
		if err != nil {
			l.fail(fmt.Errorf("raftrpc: write to %s: %w", l.c.RemoteAddr(), err))
			return
		}
		spare, small = keepWritten(out, small)
		spareExt = ext[:0]
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
	l.pending, l.ext = nil, nil
	close(l.done)
	l.mu.Unlock()
	l.c.Close()
	if l.onFail != nil {
		l.onFail(err)
	}
}

// respond queues the answer to request id (lazy: see queue).
func (l *link) respond(id uint64, lazy bool, r raft.RPCResponse) {
	err := l.queue(lazy, func(b []byte, _ *[]extent) ([]byte, error) { return appendResponse(b, id, r.Response, r.Error) })
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
	// lastRead is when the reader last read a frame (Unix nanoseconds).
	lastRead atomic.Int64

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
	err := c.queue(isEmptyAppend(args), func(b []byte, ext *[]extent) ([]byte, error) {
		return appendRequestVec(b, ext, typ, id, group, args)
	})
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

// expire fails the calls whose deadline passed; when some did and nothing
// was read from the link for silence, it fails the link (see
// Config.Silence).
func (c *client) expire(now time.Time, silence time.Duration) {
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
	if quiet := now.Sub(time.Unix(0, c.lastRead.Load())); len(late) > 0 && quiet > silence {
		c.fail(fmt.Errorf("raftrpc: %s: nothing read for %s: %w", c.addr, quiet.Round(time.Second), errTimeout))
	}
}

var errTimeout = errors.New("timeout")

// dropEnded removes from frames (whole requests, as start queues them,
// with their extents ext) those whose call ended while they waited to be
// written: timed out, or failed. A peer slow to read (a starved node)
// would otherwise get, once it reads again, every retry of every group's
// votes queued meanwhile, all stale: at 3,000 partitions one link's queue
// grew to 6.6 MB of them.
func (c *client) dropEnded(frames []byte, ext []extent) ([]byte, []extent) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return keepFrames(frames, ext, func(id uint64) bool {
		_, ok := c.calls[id]
		return ok
	})
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
		c.lastRead.Store(time.Now().UnixNano())
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

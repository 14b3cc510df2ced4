package raftrpc

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Transport is one group's raft.Transport over its Hub's links.
type Transport struct {
	hub   *Hub
	id    string
	snaps raft.StreamLayer

	consumer chan raft.RPC
	raft     atomic.Pointer[raft.Raft]
	hb       atomic.Pointer[func(raft.RPC)]
	// wake, while the group's Raft is stopped (Sleep), is called by every
	// request that arrives: see Sleep.
	wake atomic.Pointer[func()]
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup // the queue's drain, snapshots served

	ackMu sync.Mutex
	acks  map[raft.ServerID]Ack // acks.go

	qmu     sync.Mutex
	queue   []inbound // nil while idle
	running bool      // a drain goroutine runs
	closed  bool
}

// inbound is a request waiting in a group's queue.
type inbound struct {
	rpc  raft.RPC
	resp chan raft.RPCResponse
	from *link
	id   uint64
	lazy bool // the answer to an empty append
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
)

// Bind gives the transport the Raft it serves (until then every heartbeat
// takes the slow path).
func (t *Transport) Bind(r *raft.Raft) { t.raft.Store(r) }

// Consumer is Raft's channel of RPCs.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// LocalAddr is the node's Raft address.
func (t *Transport) LocalAddr() raft.ServerAddress {
	return raft.ServerAddress(t.hub.cfg.Stream.Addr().String())
}

// SetHeartbeatHandler sets Raft's heartbeat fast path, taken only when
// safe (see fastPathSafe).
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.hb.Store(nil)
		return
	}
	t.hb.Store(&cb)
}

// fastPathSafe reports whether Raft may handle the heartbeat cmd outside
// its loop: it is a follower whose term is at least the heartbeat's. This
// is replication.NetworkTransport's rule: a heartbeat of a newer
// term must go through Raft's loop, since handled concurrently with a
// leader loop it lets that loop store an entry under the newer term.
func (t *Transport) fastPathSafe(cmd any) bool {
	r := t.raft.Load()
	req, ok := cmd.(*raft.AppendEntriesRequest)
	return ok && r != nil && r.State() == raft.Follower && req.Term <= r.CurrentTerm()
}

// Sleep marks the group's Raft as stopped (replication's sleeping
// replicas): from now until Wake, every request that arrives, heartbeats
// included, calls wake and waits in the queue for the next Raft instance,
// as long as the caller's timeout allows. wake runs in a link's reader: it
// must not block. Requests queued already call it too.
func (t *Transport) Sleep(wake func()) {
	t.wake.Store(&wake)
	t.qmu.Lock()
	queued := t.running
	t.qmu.Unlock()
	if queued {
		wake()
	}
}

// Wake ends Sleep: the group's new Raft instance reads the Consumer.
func (t *Transport) Wake() { t.wake.Store(nil) }

// Campaign makes the group's Raft stand for election at once, as a
// leadership transfer's TimeoutNow does, in its own goroutine: the request
// waits for Raft to read it, until the transport is closed.
func (t *Transport) Campaign(self raft.ServerID) {
	rpc := raft.RPC{
		Command: &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
			ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(self), Addr: []byte(t.LocalAddr()),
		}},
		RespChan: make(chan raft.RPCResponse, 1),
	}
	t.qmu.Lock()
	defer t.qmu.Unlock()
	if t.closed {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		select {
		case t.consumer <- rpc:
		case <-t.done:
		}
	}()
}

// receive handles a request from link l, in l's reader: a safe heartbeat
// at once, anything else through the bounded queue.
func (t *Transport) receive(l *link, req request) {
	lazy := isEmptyAppend(req.cmd)
	if wake := t.wake.Load(); wake != nil {
		(*wake)()
	} else if isHeartbeat(req.cmd) {
		if cb := t.hb.Load(); cb != nil && t.fastPathSafe(req.cmd) {
			// Raft answers a heartbeat before the callback returns, or
			// never (shutting down), so its channel is reused.
			ch := hbPool.Get().(chan raft.RPCResponse)
			(*cb)(raft.RPC{Command: req.cmd, RespChan: ch})
			select {
			case r := <-ch:
				l.respond(req.id, lazy, r)
			default: // Raft is shutting down: it ignored the heartbeat
				l.respond(req.id, lazy, raft.RPCResponse{Error: raft.ErrTransportShutdown})
			}
			hbPool.Put(ch)
			return
		}
	}
	ch := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: req.cmd, RespChan: ch}
	t.qmu.Lock()
	switch {
	case t.closed:
		t.qmu.Unlock()
		l.respond(req.id, lazy, raft.RPCResponse{Error: raft.ErrTransportShutdown})
		return
	case len(t.queue) >= t.hub.cfg.QueueLen:
		t.qmu.Unlock()
		l.respond(req.id, lazy, raft.RPCResponse{Error: fmt.Errorf("%w: %s", ErrBusy, t.id)})
		return
	}
	t.queue = append(t.queue, inbound{rpc: rpc, resp: ch, from: l, id: req.id, lazy: lazy})
	start := !t.running
	t.running = true
	if start {
		t.wg.Add(1)
	}
	t.qmu.Unlock()
	if start {
		go t.drain()
	}
}

// hbPool keeps the answer channels of heartbeats taken on the fast path.
var hbPool = sync.Pool{New: func() any { return make(chan raft.RPCResponse, 1) }}

// drain hands the queued requests to Raft one at a time and answers them,
// until the queue is empty.
func (t *Transport) drain() {
	defer t.wg.Done()
	for {
		t.qmu.Lock()
		if len(t.queue) == 0 {
			t.queue = nil
			t.running = false
			t.qmu.Unlock()
			return
		}
		in := t.queue[0]
		t.queue[0] = inbound{}
		t.queue = t.queue[1:]
		t.qmu.Unlock()
		in.from.respond(in.id, in.lazy, t.handle(in))
	}
}

// handle gives one request to Raft and waits for its answer.
func (t *Transport) handle(in inbound) raft.RPCResponse {
	select {
	case t.consumer <- in.rpc:
	case <-t.done:
		return raft.RPCResponse{Error: raft.ErrTransportShutdown}
	}
	select {
	case r := <-in.resp:
		return r
	case <-t.done:
		return raft.RPCResponse{Error: raft.ErrTransportShutdown}
	}
}

func (t *Transport) call(target raft.ServerAddress, typ byte, args, resp any) error {
	select {
	case <-t.done:
		return raft.ErrTransportShutdown
	default:
	}
	c, err := t.hub.client(target)
	if err != nil {
		return err
	}
	return c.do(t.id, typ, args, resp, t.hub.cfg.Timeout)
}

// AppendEntries sends one append (or heartbeat) and waits for the answer.
func (t *Transport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.call(target, rpcAppendEntries, args, resp)
	if err == nil {
		t.acked(id, args, resp)
	}
	return err
}

// RequestVote asks target for its vote.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(target, rpcRequestVote, args, resp)
}

// RequestPreVote asks target whether it would vote.
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(target, rpcRequestPreVote, args, resp)
}

// TimeoutNow makes target start an election (a leadership transfer).
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(target, rpcTimeoutNow, args, resp)
}

// EncodePeer returns the address's bytes.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte { return []byte(addr) }

// DecodePeer reverses EncodePeer.
func (t *Transport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// Close unregisters the group: its requests are answered with
// raft.ErrTransportShutdown from then on. It waits for the queue's drain
// and the snapshots being served.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.hub.forget(t)
		t.qmu.Lock()
		t.closed = true
		t.qmu.Unlock()
		close(t.done)
	})
	t.wg.Wait()
	return nil
}

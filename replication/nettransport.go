package replication

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// NetworkTransport is hashicorp/raft's network transport with its
// heartbeat fast path taken only when the heartbeat cannot change Raft's
// term or state.
//
// On the fast path Raft handles a heartbeat in the transport's goroutine,
// concurrently with its own loop. A heartbeat of a newer term makes a
// leader a follower of that term while its leader loop keeps running
// until its next turn: an apply it takes in that turn is stored under
// the newer term (dispatchLogs reads the current term), an entry the new
// leader never wrote but that Raft, comparing terms only, takes for the
// new leader's entry at that index. A leader paused while another was
// elected and resumed with appends queued does exactly that: it kept its
// batches where the new leader has its no-op, applied them as committed,
// and every offset after them was shifted.
//
// So a heartbeat goes through Raft's loop, like every other RPC, unless
// Raft is a follower of a term at least the heartbeat's: then the
// heartbeat can only refresh the leader's contact (an older one is
// ignored), which is what the fast path is for (a follower busy storing
// entries must not miss its leader's heartbeats and start an election).
// Terms only grow, so the check cannot be overtaken.
type NetworkTransport struct {
	*raft.NetworkTransport
	raft atomic.Pointer[raft.Raft]
	rpcs chan raft.RPC
	done chan struct{}
	once sync.Once
}

// NewNetworkTransport returns the transport; Bind must be given the Raft
// it serves once created (until then every heartbeat takes the slow path).
func NewNetworkTransport(cfg *raft.NetworkTransportConfig) *NetworkTransport {
	t := &NetworkTransport{
		NetworkTransport: raft.NewNetworkTransportWithConfig(cfg),
		rpcs:             make(chan raft.RPC),
		done:             make(chan struct{}),
	}
	go t.forward()
	return t
}

// Bind gives the transport the Raft instance it serves.
func (t *NetworkTransport) Bind(r *raft.Raft) { t.raft.Store(r) }

// Consumer is Raft's channel of RPCs: the transport's, and heartbeats
// kept off the fast path.
func (t *NetworkTransport) Consumer() <-chan raft.RPC { return t.rpcs }

// SetHeartbeatHandler sets Raft's heartbeat fast path, taken only when
// safe (see NetworkTransport).
func (t *NetworkTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	t.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if t.fastPathSafe(rpc) {
			cb(rpc)
			return
		}
		select {
		case t.rpcs <- rpc:
		case <-t.done:
			rpc.Respond(nil, raft.ErrTransportShutdown)
		}
	})
}

// fastPathSafe reports whether Raft may handle the heartbeat rpc outside
// its loop: it is a follower whose term is at least the heartbeat's.
func (t *NetworkTransport) fastPathSafe(rpc raft.RPC) bool {
	r := t.raft.Load()
	req, ok := rpc.Command.(*raft.AppendEntriesRequest)
	return ok && r != nil && r.State() == raft.Follower && req.Term <= r.CurrentTerm()
}

func (t *NetworkTransport) forward() {
	in := t.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.rpcs <- rpc:
			case <-t.done:
				rpc.Respond(nil, raft.ErrTransportShutdown)
				return
			}
		case <-t.done:
			return
		}
	}
}

// Close closes the transport.
func (t *NetworkTransport) Close() error {
	err := t.NetworkTransport.Close()
	t.once.Do(func() { close(t.done) })
	return err
}

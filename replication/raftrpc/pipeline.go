package raftrpc

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// AppendEntriesPipeline returns a pipeline of appends to target: sends do
// not wait for answers, and the answers reach Raft in the order of the
// sends.
func (t *Transport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	select {
	case <-t.done:
		return nil, raft.ErrTransportShutdown
	default:
	}
	c, err := t.hub.client(target)
	if err != nil {
		return nil, err
	}
	p := &pipeline{
		t: t, c: c, peer: id,
		inflight: make(chan *appendFuture, t.hub.cfg.PipelineDepth),
		answers:  make(chan raft.AppendFuture),
		closed:   make(chan struct{}),
	}
	go p.relay()
	return p, nil
}

// pipeline is an AppendPipeline over a link. It shuts itself down after
// handing Raft an answer its decoder stops at (lastAnswer): hashicorp/raft
// v1.8.0's sender may go on sending after its decoder returned, and would
// otherwise wait forever for room (replication/pipeline.go tells the
// story).
type pipeline struct {
	t        *Transport
	c        *client
	peer     raft.ServerID
	inflight chan *appendFuture // sent, in order, answer not handed over
	answers  chan raft.AppendFuture
	closed   chan struct{}
	once     sync.Once
}

// AppendEntries sends an append; it blocks while PipelineDepth appends
// are in flight.
func (p *pipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f := &appendFuture{start: time.Now(), args: args, resp: resp, done: make(chan error, 1)}
	select {
	case <-p.closed:
		return nil, raft.ErrPipelineShutdown
	default:
	}
	select {
	case p.inflight <- f:
	case <-p.closed:
		return nil, raft.ErrPipelineShutdown
	}
	if err := p.c.start(p.t.id, rpcAppendEntries, args, resp, f.done, p.t.hub.cfg.Timeout); err != nil {
		p.Close()
		return nil, err
	}
	return f, nil
}

// relay hands the answers over in order.
func (p *pipeline) relay() {
	for {
		var f *appendFuture
		select {
		case f = <-p.inflight:
		case <-p.closed:
			return
		}
		select {
		case f.err = <-f.done:
		case <-p.closed:
			return
		}
		if f.err == nil {
			p.t.acked(p.peer, f.args, f.resp)
		}
		select {
		case p.answers <- f:
		case <-p.closed:
			return
		}
		if lastAnswer(f) {
			p.Close()
			return
		}
	}
}

// lastAnswer reports whether Raft's decoder (pipelineDecode) stops
// reading after f.
func lastAnswer(f *appendFuture) bool {
	return f.err != nil || !f.resp.Success || f.resp.Term > f.args.Term
}

// Consumer is the channel of answers, in order.
func (p *pipeline) Consumer() <-chan raft.AppendFuture { return p.answers }

// Close shuts the pipeline down; appends in flight are not answered.
func (p *pipeline) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// appendFuture is a pipelined append.
type appendFuture struct {
	start time.Time
	args  *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	done  chan error // the call's outcome
	err   error      // set before the future is handed to Raft
}

func (f *appendFuture) Error() error                          { return f.err }
func (f *appendFuture) Start() time.Time                      { return f.start }
func (f *appendFuture) Request() *raft.AppendEntriesRequest   { return f.args }
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }

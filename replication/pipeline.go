package replication

import (
	"sync"

	"github.com/hashicorp/raft"
)

// AppendEntriesPipeline returns Raft's pipeline to a follower, wrapped so
// that it shuts itself down once Raft stops reading its answers.
//
// hashicorp/raft v1.8.0 can deadlock a follower's pipeline: Raft's decoder
// (pipelineDecode) returns after the first unsuccessful answer (the
// follower's log did not match, a read failed, a newer term), and nothing
// reads the pipeline's answers any more. Its sender (pipelineSend) may
// still send, since it picks at random between the decoder having finished
// and new entries to send; with the default MaxRPCsInFlight the
// pipeline's channels hold nothing, so the second such send waits forever
// to hand its request to the pipeline's reader, which waits forever to
// hand the previous answer to the decoder. The pipeline is closed only
// after the sender returns, so that follower gets no entry again (its
// heartbeats still come, so it starts no election) and Raft's Shutdown
// waits forever for the sender. Seen as an in-process torture node that
// did not stop in 30 s (goroutines in decodeResponses and
// netPipeline.AppendEntries), and by grafana/pyroscope#5518 (which turned
// pipelining off).
//
// The wrapper relays the answers and, after handing Raft the one its
// decoder stops at, closes the pipeline: a waiting send then fails with
// ErrPipelineShutdown, the sender returns, and Raft replicates to that
// follower without the pipeline until it has found the follower's log
// again, as it does after any pipeline error.
func (t *NetworkTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return newStoppingPipeline(p), nil
}

// stoppingPipeline is an AppendPipeline that closes itself after the
// answer Raft's decoder stops at.
type stoppingPipeline struct {
	raft.AppendPipeline
	answers chan raft.AppendFuture
	closed  chan struct{}
	once    sync.Once
}

func newStoppingPipeline(p raft.AppendPipeline) *stoppingPipeline {
	s := &stoppingPipeline{AppendPipeline: p, answers: make(chan raft.AppendFuture), closed: make(chan struct{})}
	go s.relay()
	return s
}

// lastAnswer reports whether Raft's decoder stops reading after f: the
// conditions of hashicorp/raft's pipelineDecode (a failed read answers
// with a zero response, which is not a success).
func lastAnswer(f raft.AppendFuture) bool {
	resp := f.Response()
	return resp == nil || !resp.Success || resp.Term > f.Request().Term
}

func (s *stoppingPipeline) relay() {
	in := s.AppendPipeline.Consumer()
	for {
		select {
		case f := <-in:
			select {
			case s.answers <- f:
			case <-s.closed:
				return
			}
			if lastAnswer(f) {
				s.Close()
				return
			}
		case <-s.closed:
			return
		}
	}
}

// Consumer is the channel of answers Raft's decoder reads.
func (s *stoppingPipeline) Consumer() <-chan raft.AppendFuture { return s.answers }

// Close closes the pipeline (more than once is fine).
func (s *stoppingPipeline) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.AppendPipeline.Close()
}

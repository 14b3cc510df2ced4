package replication

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ReadIndex proves, for a linearizable read, that this replica leads its
// group and that its state machine holds every entry committed before the
// read began: the read then misses nothing another leader acknowledged.
//
// The proof is a Barrier started after the read arrived: a new entry of this
// leader's term, committed by a quorum and applied here. Raft's VerifyLeader
// is not enough. It counts any successful AppendEntries answer processed
// after the check began, including answers to requests sent before it: a
// leader paused past an election (SIGSTOP, a long GC or VM stall) finds its
// followers' old answers waiting when it resumes, counts them, and confirms
// a leadership it lost seconds ago (the torture harness saw a committed
// offset read go back in time this way). A barrier's entry did not exist
// before the read, so no answer sent earlier can commit it.
//
// Barriers cost a Raft round with an fsync on each replica, so concurrent
// reads share them: a caller waits for the first barrier started after it
// arrived, and at most one barrier runs at a time, with one more queued.
type ReadIndex struct {
	barrier func(time.Duration) error
	timeout time.Duration

	mu      sync.Mutex
	running *readRound // started; callers that came before it started
	queued  *readRound // starts when running ends; callers arriving now
}

type readRound struct {
	done chan struct{}
	err  error // set before done is closed
}

// NewReadIndex returns the read index of r's group, whose barriers end
// once down is closed (r has shut down: Await); timeout bounds each
// barrier.
func NewReadIndex(r *raft.Raft, down <-chan struct{}, timeout time.Duration) *ReadIndex {
	return newReadIndex(func(d time.Duration) error { return Await(r.Barrier(d), down) }, timeout)
}

func newReadIndex(barrier func(time.Duration) error, timeout time.Duration) *ReadIndex {
	return &ReadIndex{barrier: barrier, timeout: timeout}
}

// Confirm returns nil once a barrier started after the call committed and
// was applied here; Raft's error (raft.ErrNotLeader, ErrLeadershipLost, a
// timeout) when it failed; ctx's error when ctx ends first.
func (ri *ReadIndex) Confirm(ctx context.Context) error {
	r := ri.round()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start starts a barrier after the call, as Confirm does, without waiting
// for it. Its append carries the leader's commit index to every follower:
// meta.Group publishes what it commits with it.
func (ri *ReadIndex) Start() { ri.round() }

// round returns the first round that starts after the call: a new one run
// at once when none runs, else the one queued behind the running one.
func (ri *ReadIndex) round() *readRound {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	var r *readRound
	switch {
	case ri.running == nil:
		r = &readRound{done: make(chan struct{})}
		ri.running = r
		go ri.run(r)
	case ri.queued != nil:
		r = ri.queued
	default:
		r = &readRound{done: make(chan struct{})}
		ri.queued = r
	}
	return r
}

// run runs r's barrier, then the queued round's, until none is queued.
func (ri *ReadIndex) run(r *readRound) {
	for r != nil {
		r.err = ri.barrier(ri.timeout)
		close(r.done)
		ri.mu.Lock()
		r, ri.queued = ri.queued, nil
		ri.running = r
		ri.mu.Unlock()
	}
}

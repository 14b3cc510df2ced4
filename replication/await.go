package replication

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Futures Raft never answers. hashicorp/raft answers every request it
// takes from a running instance: a follower refuses it, a leader that
// loses the leadership fails what it has in flight, the state machine
// answers what it applies. It does not answer a request still queued when
// the instance shuts down, and the future's Error then blocks for good
// (hashicorp/raft#498): its queues are buffered channels that nothing
// reads after the shutdown — the apply queue of a partition (BatchApplyCh:
// Apply and Barrier), the one-slot leadership transfer queue, the state
// machine's queue of committed entries — and a request sent as the
// instance shuts down lands in one of them or sees the shutdown, at
// random. A replica's instance shuts down whenever it falls asleep, and
// logd's callers (a produce, the shared barrier of linearizable reads, a
// leader's readiness barrier, a leadership transfer) each waited on such a
// future; one left unanswered held every later read of its partition, or
// the leader spreader and with it the node's shutdown.
//
// So every wait on a future of a partition's Raft is Await: it ends when
// Raft answers, or once the instance has shut down (its goroutines have
// ended: nothing will answer any more). Only logd shuts a partition's
// instance down (Close, a sleep): Raft's own shutdown of a leader that
// removed itself (ShutdownOnRemove) is off, the leader steps down instead.

// instance is one run of a replica's Raft (OpenReplica or a wake), until
// shutdown (Close or a sleep).
type instance struct {
	*raft.Raft
	down chan struct{} // closed once the instance has shut down
	once sync.Once

	mu      sync.Mutex
	watched map[*watcher]struct{} // futures handed to watch and not yet answered
	gone    bool                  // down is closed: a late watch is failed after lateAnswer
}

func newInstance(r *raft.Raft) *instance { return &instance{Raft: r, down: make(chan struct{})} }

// shutdown shuts the instance down, waits until its goroutines have ended
// and closes down.
func (in *instance) shutdown() error {
	err := in.Shutdown().Error()
	in.once.Do(func() {
		close(in.down)
		in.mu.Lock()
		in.gone = true
		n := len(in.watched)
		in.mu.Unlock()
		if n > 0 {
			time.AfterFunc(lateAnswer, in.failWatched)
		}
	})
	return err
}

// await is Await for a future of in.
func (in *instance) await(f raft.Future) error { return Await(f, in.down) }

// watcher is one future handed to watch.
type watcher struct {
	once sync.Once
	then func(error)
}

func (w *watcher) end(err error) { w.once.Do(func() { w.then(err) }) }

// watch is Await without a caller waiting: then is called once, with f's
// error when Raft answers it, or with raft.ErrRaftShutdown when the
// instance has shut down and f stays unanswered lateAnswer later. One
// goroutine waits for f (the produce path runs one per Apply anyway); the
// shutdown fails whatever is still watched then, rather than a second
// goroutine per future watching down.
func (in *instance) watch(f raft.Future, then func(error)) {
	w := &watcher{then: then}
	in.mu.Lock()
	if in.watched == nil {
		in.watched = map[*watcher]struct{}{}
	}
	in.watched[w] = struct{}{}
	gone := in.gone
	in.mu.Unlock()
	if gone {
		time.AfterFunc(lateAnswer, in.failWatched)
	}
	go func() {
		err := f.Error()
		in.mu.Lock()
		delete(in.watched, w)
		in.mu.Unlock()
		w.end(err)
	}()
}

// failWatched ends every watched future with raft.ErrRaftShutdown; it
// runs lateAnswer after the shutdown, so an answer Raft gave has been
// passed on by then.
func (in *instance) failWatched() {
	in.mu.Lock()
	ws := in.watched
	in.watched = nil
	in.mu.Unlock()
	for w := range ws {
		w.end(raft.ErrRaftShutdown)
	}
}

// lateAnswer is how long Await still waits for an answer once the
// instance has shut down: an answer Raft gave is already there, and only
// the goroutine reading it is left to run.
const lateAnswer = 100 * time.Millisecond

// Await returns f's error once Raft answers it, or raft.ErrRaftShutdown
// when down (closed once the instance f was asked of has shut down) is
// closed and f stays unanswered. A goroutine waits for f meanwhile: it
// ends when Raft answers, and stays (a few hundred bytes) if Raft never
// does.
func Await(f raft.Future, down <-chan struct{}) error {
	answer := make(chan error, 1)
	go func() { answer <- f.Error() }()
	select {
	case err := <-answer:
		return err
	case <-down:
	}
	t := time.NewTimer(lateAnswer)
	defer t.Stop()
	select {
	case err := <-answer:
		return err
	case <-t.C:
		return raft.ErrRaftShutdown
	}
}

package server

import (
	"context"
	"sync"
)

// lanes runs jobs in order per key and in parallel across keys, with at
// most limit jobs admitted at once: ProduceStream's scheduler, where a key
// is a (topic, partition).
//
// A job has three steps (laneJob). start runs on the key's lane, in the
// order the key's jobs were dispatched: it starts the work (a produce's
// append). wait runs in a goroutine of its own, so the lane starts its
// next job meanwhile (appends pipeline). deliver runs in dispatch order
// per key: after the deliver of the key's job before. Then the job's slot
// is free.
//
// A lane's goroutine exits as soon as its queue is empty, so lanes holds
// at most limit jobs and as many lanes, however many keys it sees. The
// last deliver of a lane that exited is remembered (tails) until the next
// lane of its key delivers after it.
type lanes struct {
	slots chan struct{}
	mu    sync.Mutex
	queue map[string]chan laneJob
	tails map[string]<-chan struct{}
	wg    sync.WaitGroup
}

// laneJob is a job's three steps; see lanes.
type laneJob interface {
	start()   // on the key's lane, in dispatch order
	wait()    // in a goroutine of its own
	deliver() // in dispatch order, after the key's job before delivered
}

func newLanes(limit int) *lanes {
	return &lanes{slots: make(chan struct{}, limit), queue: map[string]chan laneJob{}, tails: map[string]<-chan struct{}{}}
}

// admit takes a slot for the next job: it waits while limit jobs are in,
// or until ctx ends.
func (l *lanes) admit(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dispatch queues job on key's lane, starting the lane if it has none.
// Each dispatch follows an admit; it never blocks.
func (l *lanes) dispatch(key string, job laneJob) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.queue[key]
	if !ok {
		ch = make(chan laneJob, cap(l.slots))
		l.queue[key] = ch
		prev, ok := l.tails[key]
		if ok {
			delete(l.tails, key)
		} else {
			prev = closed
		}
		l.wg.Add(1)
		go l.run(key, ch, prev)
	}
	ch <- job
}

// closed is a channel that is closed: "nothing to wait for".
var closed = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// run is a lane: it starts its jobs in order until its queue is empty.
// prev is closed once the deliver before the lane's next one has run.
func (l *lanes) run(key string, ch chan laneJob, prev <-chan struct{}) {
	defer l.wg.Done()
	for {
		job, ok := l.next(key, ch, prev)
		if !ok {
			return
		}
		job.start()
		done := make(chan struct{})
		l.wg.Add(1)
		go l.finish(job, prev, done)
		prev = done
	}
}

// next is the lane's next job, or false when the queue is empty: the lane
// is then removed (under the lock, so no dispatch is lost) and its last
// deliver, if still to come, remembered for the key's next lane.
func (l *lanes) next(key string, ch chan laneJob, prev <-chan struct{}) (laneJob, bool) {
	for {
		select {
		case job := <-ch:
			return job, true
		default:
		}
		l.mu.Lock()
		if len(ch) > 0 {
			l.mu.Unlock()
			continue
		}
		delete(l.queue, key)
		select {
		case <-prev:
		default:
			l.tails[key] = prev
		}
		l.mu.Unlock()
		return nil, false
	}
}

// finish waits for a job, delivers it after the job before it, and frees
// its slot.
func (l *lanes) finish(job laneJob, prev <-chan struct{}, done chan struct{}) {
	defer l.wg.Done()
	defer close(done)
	job.wait()
	<-prev
	job.deliver()
	<-l.slots
}

// wait waits until every job dispatched has delivered.
func (l *lanes) wait() { l.wg.Wait() }

package broker

import (
	"context"
	"sync"
)

// Lanes runs jobs in order per key and in parallel across keys, with at
// most limit jobs admitted at once: the scheduler of a front-end that
// pipelines a stream's produces (gRPC's ProduceStream), where a key is a
// (topic, partition), so a partition's appends start and are answered in
// arrival order while partitions proceed in parallel.
//
// A job has three steps (LaneJob). Start runs on the key's lane, in the
// order the key's jobs were dispatched: it starts the work (a produce's
// append, StartProduce). Wait runs in a goroutine of its own, so the lane
// starts its next job meanwhile (appends pipeline). Deliver runs in
// dispatch order per key: after the Deliver of the key's job before. Then
// the job's slot is free.
//
// A lane's goroutine exits as soon as its queue is empty, so Lanes holds
// at most limit jobs and as many lanes, however many keys it sees. The
// last deliver of a lane that exited is remembered (tails) until the next
// lane of its key delivers after it.
type Lanes struct {
	slots chan struct{}
	mu    sync.Mutex
	queue map[string]chan LaneJob
	tails map[string]<-chan struct{}
	wg    sync.WaitGroup
}

// LaneJob is a job's three steps; see Lanes.
type LaneJob interface {
	Start()   // on the key's lane, in dispatch order
	Wait()    // in a goroutine of its own
	Deliver() // in dispatch order, after the key's job before delivered
}

// NewLanes makes lanes that admit at most limit jobs at once.
func NewLanes(limit int) *Lanes {
	return &Lanes{slots: make(chan struct{}, limit), queue: map[string]chan LaneJob{}, tails: map[string]<-chan struct{}{}}
}

// Admit takes a slot for the next job: it waits while limit jobs are in,
// or until ctx ends.
func (l *Lanes) Admit(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dispatch queues job on key's lane, starting the lane if it has none.
// Each Dispatch follows an Admit; it never blocks.
func (l *Lanes) Dispatch(key string, job LaneJob) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.queue[key]
	if !ok {
		ch = make(chan LaneJob, cap(l.slots))
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
func (l *Lanes) run(key string, ch chan LaneJob, prev <-chan struct{}) {
	defer l.wg.Done()
	for {
		job, ok := l.next(key, ch, prev)
		if !ok {
			return
		}
		job.Start()
		done := make(chan struct{})
		l.wg.Add(1)
		go l.finish(job, prev, done)
		prev = done
	}
}

// next is the lane's next job, or false when the queue is empty: the lane
// is then removed (under the lock, so no dispatch is lost) and its last
// deliver, if still to come, remembered for the key's next lane.
func (l *Lanes) next(key string, ch chan LaneJob, prev <-chan struct{}) (LaneJob, bool) {
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
func (l *Lanes) finish(job LaneJob, prev <-chan struct{}, done chan struct{}) {
	defer l.wg.Done()
	defer close(done)
	job.Wait()
	<-prev
	job.Deliver()
	<-l.slots
}

// Wait waits until every job dispatched has delivered.
func (l *Lanes) Wait() { l.wg.Wait() }

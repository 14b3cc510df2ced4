package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/cluster"
)

// A produce to a sleeping partition (cluster hibernation) wakes its Raft
// group, and the group has no leader until the election that wake
// started is over: tens of milliseconds on a quiet machine. StartProduce
// waits for it inside the request instead of answering "no leader yet,
// retry" (Kafka's LEADER_NOT_AVAILABLE, which clients show as an error or
// hide behind seconds of backoff):
//
//   - the wait is in the returned future's Wait, not in StartProduce, so
//     a request over many sleeping partitions wakes them all before it
//     waits for any, and waits for their elections at once, not one after
//     the other;
//   - it lasts until the group knows a leader, bounded by the request's
//     deadline (wakeWait without one), and then the write starts: here
//     when this node won, else the answer names the leader;
//   - the later produces to the same partition queue behind it (wakeQueue)
//     and start, in arrival order, once it has started: a pipelining
//     client's next batch for the partition must not be appended before
//     the one that woke it.

// wakeWait bounds the wait for a woken partition's election of a request
// without a deadline.
const wakeWait = 10 * time.Second

// wakeQueue holds, per partition, the last produce waiting for the
// partition's wake (its started channel closes once its write has started
// or failed to).
type wakeQueue struct {
	// n is len(tail): the produce path takes no lock while no partition
	// is waking.
	n    atomic.Int32
	mu   sync.Mutex
	tail map[partKey]chan struct{}
}

type partKey struct {
	topic string
	id    int32
}

// join appends a produce to k's queue; prev is the one it starts after
// (nil: none waits, the queue was empty), mine closes once it has started.
func (q *wakeQueue) join(k partKey, first bool) (prev, mine chan struct{}) {
	if !first && q.n.Load() == 0 {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	prev = q.tail[k]
	if prev == nil && !first {
		return nil, nil
	}
	if q.tail == nil {
		q.tail = map[partKey]chan struct{}{}
	}
	mine = make(chan struct{})
	if prev == nil {
		q.n.Add(1)
	}
	q.tail[k] = mine
	return prev, mine
}

// done closes mine and leaves k's queue empty if mine is its last.
func (q *wakeQueue) done(k partKey, mine chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	close(mine)
	if q.tail[k] == mine {
		delete(q.tail, k)
		q.n.Add(-1)
	}
}

// StartProduce checks r and starts its write, in order with the
// partition's earlier writes, and returns the future that waits for its
// result. Pipelining front-ends call it in arrival order and wait later:
// a producer's next batches start while this one waits. A write to a
// sleeping partition starts once the wake it caused has elected a leader
// (see above). Every caller must call the future's Wait.
func (b *Broker) StartProduce(ctx context.Context, r ProduceRequest) (ProduceFuture, error) {
	k := partKey{r.Topic, r.Partition}
	if prev, mine := b.wakes.join(k, false); mine != nil {
		return &wakeFuture{b: b, ctx: ctx, r: r, k: k, prev: prev, mine: mine}, nil
	}
	f, err := b.startProduce(ctx, r)
	var nl *cluster.NotLeaderError
	if !errors.As(err, &nl) || !nl.Woke {
		return f, err
	}
	prev, mine := b.wakes.join(k, true)
	return &wakeFuture{b: b, ctx: ctx, r: r, k: k, prev: prev, mine: mine}, nil
}

// wakeFuture is the ProduceFuture of a produce queued for a woken
// partition: its Wait, once prev has started (nil: at once) and the
// partition knows a leader, starts r's write and waits for it.
type wakeFuture struct {
	b          *Broker
	ctx        context.Context
	r          ProduceRequest
	k          partKey
	prev, mine chan struct{}

	once sync.Once
	res  ProduceResult
	err  error
}

func (f *wakeFuture) Wait() (ProduceResult, error) {
	f.once.Do(func() {
		started, err := f.b.startAfter(f.ctx, f.r, f.prev)
		f.b.wakes.done(f.k, f.mine)
		if err != nil {
			f.err = err
			return
		}
		f.res, f.err = started.Wait()
	})
	return f.res, f.err
}

func (b *Broker) startAfter(ctx context.Context, r ProduceRequest, prev chan struct{}) (ProduceFuture, error) {
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p, err := b.producePartition(ctx, r)
	if err != nil {
		return nil, err
	}
	limit := wakeWait
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	b.plane.awaitLeader(ctx, p, limit)
	return b.startProduce(ctx, r)
}

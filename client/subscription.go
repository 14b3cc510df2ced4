package client

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// subscription reads one partition from an offset on a Subscribe stream:
// the server pushes batches (up to MaxBytes a message) while the
// application handles the records it has, instead of one fetch round trip
// per MaxBytes. What is read ahead is bounded by HTTP/2 flow control (the
// stream's window) plus one decoded message waiting in ch.
type subscription struct {
	off    int64 // where the next result starts
	cancel context.CancelFunc
	ch     chan fetched // capacity 1; a result with err is the last
	done   chan struct{}
}

// subscribe starts reading cp at its position. Without Follow it stops at
// the partition's end.
func (cons *Consumer) subscribe(cp *consumedPartition) *subscription {
	ctx, cancel := context.WithCancel(cons.ctx)
	sub := &subscription{off: cp.position, cancel: cancel, ch: make(chan fetched, 1), done: make(chan struct{})}
	off, leader := cp.position, cp.leader()
	cons.subMu.Lock()
	defer cons.subMu.Unlock()
	if cons.ctx.Err() != nil { // closed: Close waits for no more goroutines
		cancel()
		close(sub.done)
		return sub
	}
	cons.subs.Add(1)
	go func() {
		defer cons.subs.Done()
		defer close(sub.done)
		defer cancel()
		cons.stream(ctx, cp, sub, off, leader)
	}()
	return sub
}

// stop ends sub and waits for its goroutine.
func (sub *subscription) stop() {
	sub.cancel()
	<-sub.done
}

// stream runs sub: it touches cp's constant fields only (Poll owns the rest).
func (cons *Consumer) stream(ctx context.Context, cp *consumedPartition, sub *subscription, off int64, leader string) {
	push := func(r fetched) bool {
		select {
		case sub.ch <- r:
		case <-ctx.Done():
			return false
		}
		select {
		case cons.ready <- struct{}{}:
		default:
		}
		return true
	}
	var st logdv1.Log_SubscribeClient
	var resp *logdv1.FetchResponse
	addr, err := cons.c.call(ctx, leader, func(ctx context.Context, cc *grpc.ClientConn) error {
		s, err := logdv1.NewLogClient(cc).Subscribe(ctx, &logdv1.SubscribeRequest{
			Topic: cons.opts.Topic, Partition: cp.partition, Offset: off, MaxBytes: cons.opts.MaxBytes,
			Isolation: cons.opts.Isolation.proto(),
		}, grpc.ForceCodecV2(fetchCodec{}))
		if err != nil {
			return err
		}
		// "Not the leader" and "out of range" come with the first answer.
		if resp, err = s.Recv(); err != nil {
			return err
		}
		st = s
		return nil
	})
	for {
		if err != nil {
			if ctx.Err() == nil {
				push(fetched{cp: cp, from: off, next: off, addr: addr, err: cons.streamError(err, cp, off)})
			}
			return
		}
		r := cons.decode(cp, off, resp)
		r.addr = addr
		if !push(r) || r.err != nil {
			return
		}
		if r.corrupt != nil {
			// The stream went on past the batch: what follows it waits
			// for the application to skip it.
			push(fetched{cp: cp, from: r.next, next: r.next, addr: addr, err: r.corrupt})
			return
		}
		off = r.next
		if !cons.opts.Follow && off >= cp.end {
			return
		}
		resp, err = st.Recv()
	}
}

// streamError is the error a subscription ends with.
func (cons *Consumer) streamError(err error, cp *consumedPartition, off int64) error {
	if errors.Is(err, io.EOF) {
		err = status.Error(codes.Unavailable, "the server ended the subscription")
	}
	if status.Code(err) == codes.Unimplemented {
		return err // Poll falls back to Fetch
	}
	return cons.readError(err, cp, off)
}

// pollSubscribed is Poll reading through subscriptions.
func (cons *Consumer) pollSubscribed(ctx context.Context, active []*consumedPartition) ([]ConsumedRecord, error) {
	for _, cp := range active {
		if cp.sub != nil && cp.sub.off != cp.position {
			cp.sub.stop() // moved by Seek
			cp.sub = nil
		}
		if cp.sub == nil {
			cp.sub = cons.subscribe(cp)
		}
	}
	var timeout <-chan time.Time
	for {
		var res []fetched
		for _, cp := range active {
			select {
			case r := <-cp.sub.ch:
				res = append(res, r)
			default:
			}
		}
		if len(res) > 0 {
			return cons.advanceSubscribed(res)
		}
		if timeout == nil {
			t := time.NewTimer(cons.opts.MaxWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-cons.ready:
		case <-timeout:
			return cons.confirmEmpty(ctx, active)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cons.closed:
			return nil, ErrClosed
		}
	}
}

// advanceSubscribed moves positions past res and returns the records. When
// one failed, nothing moves and the subscriptions that answered start again
// from their positions at the next Poll.
func (cons *Consumer) advanceSubscribed(res []fetched) ([]ConsumedRecord, error) {
	var err error
	for _, r := range res {
		if r.addr != "" && r.err == nil {
			r.cp.setLeader(r.addr)
		}
		if r.err != nil && err == nil {
			err = r.err
			if status.Code(err) == codes.Unimplemented {
				cons.noSubscribe = true // a server without Subscribe: fetch
				err = nil
			} else if leaderOf(r.err) == "" && status.Code(r.err) != codes.OutOfRange {
				r.cp.setLeader("")
			}
		}
	}
	if err != nil || cons.noSubscribe {
		for _, r := range res {
			r.cp.sub.stop()
			r.cp.sub = nil
		}
		return nil, err
	}
	var out []ConsumedRecord
	for _, r := range res {
		if r.from != r.cp.position {
			continue // cannot happen: a subscription starts where its partition is
		}
		out = append(out, r.recs...)
		r.cp.position = r.next
		r.cp.sub.off = r.next
	}
	return out, nil
}

// confirmEmpty is what a Poll whose subscriptions brought nothing answers.
// A subscription served by a node that stopped leading its partition (cut
// off from the others, or paused past an election) brings nothing new
// while the new leader appends, so "nothing new" is confirmed by one Fetch
// that does not wait: a leader serves it only after confirming its
// leadership (redirects are followed). Records it finds are returned (the
// stale subscriptions restart from the new positions at the next Poll);
// its error is returned; else there is truly nothing yet.
func (cons *Consumer) confirmEmpty(ctx context.Context, active []*consumedPartition) ([]ConsumedRecord, error) {
	res := cons.fetchAll(ctx, active, 0)
	n, err := count(res)
	if err != nil || n > 0 {
		return cons.advance(res, err)
	}
	return nil, nil
}

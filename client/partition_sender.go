package client

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// pendingBatch is one partition's batch from its first record to its
// completion.
type pendingBatch struct {
	recs    []batch.Record
	futures []*Future
	size    int // estimated encoded size of the records (buffer accounting)
	created time.Time
	done    chan struct{} // closed once every future completed

	// Set when first sent; retries resend these bytes unchanged.
	encoded []byte
}

// partitionSender owns one partition's queue and sends its batches one at a
// time, in order, each until it is acknowledged or fails for good. That is
// what keeps per-partition order under retries.
type partitionSender struct {
	p    *Producer
	tp   topicPartition
	wake chan struct{} // capacity 1

	// Guarded by p.mu.
	open  *pendingBatch   // accepting records
	queue []*pendingBatch // full, not yet sent
	last  *pendingBatch   // newest batch (open or queued): what Flush waits for

	// Owned by the run goroutine.
	addr       string // where the partition's leader is believed to be; "": a seed
	producerID int64
	nextSeq    int32
}

func (s *partitionSender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// addLocked appends rec to the open batch, queueing the batch first when rec
// would overflow it.
func (s *partitionSender) addLocked(rec Record, size int, f *Future) {
	if s.open != nil && batch.HeaderSize+s.open.size+size > s.p.opts.MaxBatchBytes {
		s.queue = append(s.queue, s.open)
		s.open = nil
		s.signal()
	}
	if s.open == nil {
		s.open = &pendingBatch{created: time.Now(), done: make(chan struct{})}
		s.last = s.open
		s.signal()
	}
	br := batch.Record{Timestamp: rec.Timestamp.UnixMilli(), Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		br.Headers = append(br.Headers, batch.Header{Key: h.Key, Value: h.Value})
	}
	s.open.recs = append(s.open.recs, br)
	s.open.futures = append(s.open.futures, f)
	s.open.size += size
}

// run sends batches until the producer is closed and nothing is left.
func (s *partitionSender) run() {
	defer s.p.wg.Done()
	for {
		b := s.next()
		if b == nil {
			return
		}
		s.deliver(b)
	}
}

// next waits for a batch to send: a queued one, or the open one once its
// linger passed (at once when flushing or closing). nil: closed and empty.
func (s *partitionSender) next() *pendingBatch {
	p := s.p
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		if len(s.queue) > 0 {
			b := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			p.mu.Unlock()
			return b
		}
		var wait time.Duration
		if b := s.open; b != nil {
			wait = time.Until(b.created.Add(p.opts.Linger))
			if wait <= 0 || p.flushing > 0 || p.closed {
				s.open = nil
				p.mu.Unlock()
				return b
			}
		} else if p.closed {
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()

		var tc <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tc = timer.C
		}
		select {
		case <-s.wake:
		case <-tc:
		}
	}
}

// deliver sends b until it is acknowledged, fails for good, or its delivery
// timeout passes, then completes its futures and frees its buffer space.
func (s *partitionSender) deliver(b *pendingBatch) {
	p := s.p
	n := int32(len(b.recs))
	if s.nextSeq > math.MaxInt32-n {
		// Sequences would wrap: continue as a new producer.
		s.producerID, s.nextSeq = newProducerID(), 0
	}
	b.encoded = batch.Encode(nil, 0, batch.Producer{ID: s.producerID, Epoch: 0, Sequence: s.nextSeq}, b.recs)
	req := &logdv1.ProduceRequest{Topic: s.tp.topic, Partition: &s.tp.partition, Batch: b.encoded, Acks: p.acks}

	deadline := b.created.Add(p.opts.DeliveryTimeout)
	backoff := p.opts.RetryBackoff
	ambiguous := false // an attempt may have appended b
	var resp *logdv1.ProduceResponse
	var err error
	for attempt := 0; ; attempt++ {
		if p.ctx.Err() != nil {
			err = fmt.Errorf("%w before the batch was acknowledged", ErrClosed)
			break
		}
		p.inflight <- struct{}{}
		resp, err = s.attempt(req, attempt, deadline)
		<-p.inflight
		if err == nil || !retryable(err) {
			break
		}
		ambiguous = true
		wait := min(backoff, time.Until(deadline))
		if wait <= 0 {
			err = fmt.Errorf("not acknowledged within the delivery timeout (%v): %w", p.opts.DeliveryTimeout, err)
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}

	var base int64
	dup := false
	if err == nil {
		if len(resp.GetAppends()) != 1 {
			ambiguous = true // appended, at offsets we cannot tell
			err = status.Errorf(codes.Internal, "produce to %s/%d: %d appends in the answer, want 1", s.tp.topic, s.tp.partition, len(resp.GetAppends()))
		} else {
			a := resp.GetAppends()[0]
			base, dup = a.GetBaseOffset(), a.GetDuplicate()
		}
	}
	switch {
	case err == nil:
		s.nextSeq += n
	case ambiguous:
		// b may be in the log: its sequence cannot be reused, and the next
		// batch's would be out of order if it is not. Start afresh.
		s.producerID, s.nextSeq = newProducerID(), 0
	}
	if status.Code(err) == codes.NotFound {
		p.c.topics.forget(s.tp.topic)
	}
	if err != nil {
		err = fmt.Errorf("produce to %s/%d: %w", s.tp.topic, s.tp.partition, err)
	}
	for i, f := range b.futures {
		ack := Ack{Topic: s.tp.topic, Partition: s.tp.partition, Timestamp: time.UnixMilli(b.recs[i].Timestamp)}
		if err == nil {
			ack.Offset, ack.Duplicate = base+int64(i), dup
		}
		f.complete(ack, err)
	}
	p.mu.Lock()
	p.releaseLocked(b.size)
	p.mu.Unlock()
	close(b.done)
}

// attempt sends req once: the first attempt on the leader's ProduceStream,
// retries as unary Produce calls, which follow a "not leader" answer to the
// leader (remembered for the partition's next batches).
func (s *partitionSender) attempt(req *logdv1.ProduceRequest, attempt int, deadline time.Time) (*logdv1.ProduceResponse, error) {
	p := s.p
	ctx, cancel := context.WithTimeout(p.ctx, min(p.opts.RequestTimeout, max(time.Until(deadline), time.Millisecond)))
	defer cancel()
	req.RequestId = p.reqID.Add(1)
	if attempt == 0 {
		addr := s.addr
		if addr == "" {
			addr = p.c.bootstrap()
		}
		ps, err := p.streams.get(addr)
		if err == ErrClosed {
			return nil, err
		}
		if err == nil {
			resp, err := ps.produce(ctx, req)
			if status.Code(err) != codes.Unimplemented {
				return resp, err
			}
			// A server without ProduceStream: unary calls do.
		}
	}
	var resp *logdv1.ProduceResponse
	addr, err := p.c.call(ctx, s.addr, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewLogClient(cc).Produce(ctx, req)
		return err
	})
	switch {
	case err == nil:
		s.addr = addr
	case retryable(err) && leaderOf(err) == "":
		// The node may be gone: the next attempt asks the bootstrap node,
		// which answers or names the current leader.
		s.addr = ""
	}
	return resp, err
}

package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// errNoStream is a first attempt that could not use a ProduceStream: the
// batch is sent with a unary call at once, with no backoff.
var errNoStream = errors.New("no produce stream")

// encode (re)encodes b's records as a batch of the producer's id and
// epoch from sequence seq.
func (s *partitionSender) encode(b *pendingBatch, seq int32) {
	b.encoded = batch.Encode(b.encoded[:0], 0, batch.Producer{ID: s.producerID, Epoch: s.epoch, Sequence: seq}, b.recs)
	b.pid, b.epoch, b.seq = s.producerID, s.epoch, seq
}

// nextEpoch continues as the producer's next epoch, its sequences from 0
// (Kafka's KIP-360). The partition refuses a batch of an earlier epoch
// once it has one of this epoch, so an attempt of an abandoned batch that
// reaches it late (still queued on a server, waiting there for a leader)
// is not appended after batches sent since: a record given up on never
// lands after a later one of the same producer. The partition does not
// know the epoch yet: one batch at a time until it is acknowledged. Past
// the largest epoch, a new producer id.
func (s *partitionSender) nextEpoch() {
	if s.epoch < math.MaxInt16 {
		s.epoch++
	} else {
		s.producerID, s.epoch = newProducerID(), 0
	}
	s.ackSeq, s.sendSeq, s.confirmed = 0, 0, false
}

// prepare makes b's bytes right for a retry, every batch before it having
// been settled. When the sequence rewound under b (an earlier batch failed
// for good without being appended) or the producer id changed, b is
// re-encoded where the server now expects the producer's next batch,
// unless an attempt of b went unanswered: those bytes may be in the log
// (or be appended later), so they are resent as they are, and the server
// deduplicates them or refuses them as out of order.
func (s *partitionSender) prepare(b *pendingBatch) {
	if s.stale(b) && !b.unanswered {
		s.encode(b, s.ackSeq)
	}
}

// stale: b's bytes are not where the server expects the producer's next
// batch.
func (s *partitionSender) stale(b *pendingBatch) bool {
	return b.pid != s.producerID || b.epoch != s.epoch || b.seq != s.ackSeq
}

// settle takes b from its first attempt's outcome to its completion: it
// retries b (unary calls, which follow "not leader" answers) until it is
// acknowledged, fails for good, or its delivery timeout passes. Every batch
// before b in the partition is settled already.
func (s *partitionSender) settle(b *pendingBatch, resp *logdv1.ProduceResponse, err error) {
	p := s.p
	deadline := b.created.Add(p.opts.DeliveryTimeout)
	backoff := p.opts.RetryBackoff
	retried := false // a retryable error was seen: b may be in the log
	for err != nil {
		switch {
		case errors.Is(err, errNoStream) || status.Code(err) == codes.Unimplemented:
			// No stream (or a server without ProduceStream): unary, now.
			if status.Code(err) == codes.Unimplemented {
				s.noStream = true
			}
		case !retryable(err):
			s.complete(b, nil, err, retried)
			return
		case status.Code(err) == codes.FailedPrecondition && !b.unanswered && s.stale(b):
			// Out of order because the sequence rewound under b (a batch
			// before it failed for good): re-encoded, b goes at once.
		default:
			retried = true
			if status.Code(err) != codes.FailedPrecondition {
				// Out of order is an answer: not appended. Anything else
				// retryable may have appended b.
				b.unanswered = true
			}
			wait := min(backoff, time.Until(deadline))
			if wait <= 0 {
				s.complete(b, nil, fmt.Errorf("%w (%v): %w", ErrDeliveryTimeout, p.opts.DeliveryTimeout, err), true)
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
			}
			backoff = min(2*backoff, maxRetryBackoff)
		}
		if p.ctx.Err() != nil {
			s.complete(b, nil, fmt.Errorf("%w before the batch was acknowledged", ErrClosed), retried)
			return
		}
		s.prepare(b)
		p.inflight <- struct{}{}
		resp, err = s.attempt(b, deadline)
		<-p.inflight
	}
	s.complete(b, resp, nil, retried)
}

// attempt sends b once as a unary Produce call, following a "not leader"
// answer to the leader (remembered for the partition's next batches).
func (s *partitionSender) attempt(b *pendingBatch, deadline time.Time) (*logdv1.ProduceResponse, error) {
	p := s.p
	ctx, cancel := context.WithTimeout(p.ctx, min(p.opts.RequestTimeout, max(time.Until(deadline), time.Millisecond)))
	defer cancel()
	req := &logdv1.ProduceRequest{Topic: s.tp.topic, Partition: &s.tp.partition, Batch: b.encoded, Acks: p.acks, RequestId: p.reqID.Add(1)}
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

// complete ends b: acknowledged when err is nil, failed otherwise, and moves
// the partition's sequence. retried: some attempt failed retryably, so a
// failed b may be in the log.
func (s *partitionSender) complete(b *pendingBatch, resp *logdv1.ProduceResponse, err error, retried bool) {
	p := s.p
	var base int64
	dup := false
	if err == nil {
		if len(resp.GetAppends()) != 1 {
			retried = true // appended, at offsets we cannot tell
			err = status.Errorf(codes.Internal, "produce to %s/%d: %d appends in the answer, want 1", s.tp.topic, s.tp.partition, len(resp.GetAppends()))
		} else {
			a := resp.GetAppends()[0]
			base, dup = a.GetBaseOffset(), a.GetDuplicate()
		}
	}
	switch {
	case b.pid != s.producerID || b.epoch != s.epoch:
		// Old bytes of a former epoch: its sequence is not ours.
	case err == nil:
		s.ackSeq, s.confirmed = b.seq+int32(len(b.recs)), true
	case retried:
		// b may be in the log, or land later: its sequence cannot be
		// reused, and the next batch's would be out of order if it is
		// not. The next epoch starts afresh and fences b's.
		s.nextEpoch()
	default:
		// Refused without being appended: the sequence is not used, the
		// next batch takes it (prepare re-encodes batches sent after b).
	}
	if status.Code(err) == codes.NotFound {
		p.c.topics.forget(s.tp.topic)
	}
	if err != nil {
		err = fmt.Errorf("produce to %s/%d: %w", s.tp.topic, s.tp.partition, wrapStatus(err))
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

// produceError is the error a stream response carries, or nil.
func produceError(resp *logdv1.ProduceResponse) error {
	if code := resp.GetErrorCode(); code != 0 {
		return status.Error(codes.Code(code), resp.GetErrorMessage())
	}
	return nil
}

func contextStatus(err error) error { return status.FromContextError(err).Err() }

package client

import (
	"context"
	"math"
	"time"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// maxInFlightPerPartition bounds a partition's batches sent and not yet
// answered. A retried batch must still be among the last batches the server
// remembers for its producer (partition.rememberedBatches, 5) or its
// duplicate goes unnoticed: with at most this many in flight, at most
// maxInFlightPerPartition-1 batches can have been appended after it.
const maxInFlightPerPartition = 4

// pendingBatch is one partition's batch from its first record to its
// completion.
type pendingBatch struct {
	recs    []batch.Record
	futures []*Future
	size    int // estimated encoded size of the records (buffer accounting)
	created time.Time
	done    chan struct{} // closed once every future completed

	// Set when encoded, with the producer id, epoch and first sequence
	// they carry. Retries resend these bytes unchanged, unless the
	// sequence rewound under them and no attempt can have appended them
	// (see prepare).
	encoded []byte
	pid     int64
	epoch   int16
	seq     int32
	// unanswered: an attempt got no answer from the server (a timeout, a
	// broken stream): it may have appended the batch, or still may. Such
	// bytes are never re-encoded under another sequence.
	unanswered bool
}

// partitionSender owns one partition's queue. It pipelines full batches on
// the leader's ProduceStream, up to maxInFlightPerPartition; the server
// appends a stream's requests for one partition in the order they arrive.
// Answers are taken in order; when one is not a success, the whole window
// is settled one batch at a time, in order (see settle), which is where
// retries, sequence rewinds and producer id changes happen.
//
// Sequences: ackSeq is where the server stands for producerID (the sequence
// after the last batch acknowledged under it); sendSeq is the next batch's
// (ackSeq plus the records in flight). Until a batch under producerID is
// acknowledged (confirmed), one batch at a time: the server accepts an
// unknown producer at any sequence, so a second batch could overtake a
// failed first one.
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
	epoch      int16
	ackSeq     int32
	sendSeq    int32
	confirmed  bool
	noStream   bool // the leader has no ProduceStream: unary calls, one batch at a time
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
	var window []*flight // sent, in order, answers not yet taken
	for {
		if len(window) == 0 {
			b := s.next()
			if b == nil {
				return
			}
			s.p.inflight <- struct{}{}
			window = append(window, s.launch(b))
			continue
		}
		for len(window) < s.windowSize() {
			b := s.ready()
			if b == nil {
				break
			}
			window = append(window, s.launch(b))
		}
		head := window[0]
		if !head.answered {
			select {
			case r := <-head.res:
				head.answer(r)
			case <-head.ctx.Done():
				head.expire()
			case <-s.wake:
				continue // maybe more to send
			}
		}
		if head.err == nil {
			window[0] = nil
			window = window[1:]
			s.complete(head.b, head.resp, nil, false)
			continue
		}
		// Settle the window in order: every answer first (so nothing of it
		// is still in flight on the stream), then each batch.
		for _, fl := range window {
			fl.wait()
		}
		for _, fl := range window {
			s.settle(fl.b, fl.resp, fl.err)
		}
		window = nil
		s.sendSeq = s.ackSeq
	}
}

// windowSize is how many batches may be in flight now.
func (s *partitionSender) windowSize() int {
	// Near the sequence's wrap, one at a time: launch then starts a new
	// producer id with nothing in flight under the old one.
	if !s.confirmed || s.noStream || s.sendSeq > math.MaxInt32-(1<<20) {
		return 1
	}
	return maxInFlightPerPartition
}

// ready returns a batch to add to a non-empty window, holding an in-flight
// slot for it, or nil: a full (queued) batch, or the open one when flushing
// or closing. A partly filled batch otherwise waits for the window to empty,
// so records arriving meanwhile join it: small batches are not pipelined
// one fsync each.
func (s *partitionSender) ready() *pendingBatch {
	p := s.p
	select {
	case p.inflight <- struct{}{}:
	default:
		return nil // the producer's MaxInFlight is reached
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(s.queue) > 0 {
		b := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		return b
	}
	if b := s.open; b != nil && (p.flushing > 0 || p.closed) {
		s.open = nil
		return b
	}
	<-p.inflight
	return nil
}

// next waits for a batch to send with nothing in flight: a queued one, or
// the open one once its linger passed (at once when flushing or closing).
// nil: closed and empty.
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

// flight is a batch's first attempt, sent on the leader's ProduceStream
// without waiting for its answer. It holds one of the producer's in-flight
// slots until answered.
type flight struct {
	p      *Producer
	b      *pendingBatch
	ctx    context.Context // the attempt's timeout
	cancel context.CancelFunc
	ps     *produceStream
	reqID  uint64
	res    <-chan streamResult

	answered bool
	resp     *logdv1.ProduceResponse
	err      error
}

// launch encodes b at sendSeq and sends it on the leader's stream. The
// caller holds an in-flight slot for it.
func (s *partitionSender) launch(b *pendingBatch) *flight {
	p := s.p
	n := int32(len(b.recs))
	if s.sendSeq > math.MaxInt32-n {
		// Sequences would wrap (nothing is in flight: see windowSize).
		s.nextEpoch()
	}
	s.encode(b, s.sendSeq)
	s.sendSeq += n

	deadline := b.created.Add(p.opts.DeliveryTimeout)
	ctx, cancel := context.WithTimeout(p.ctx, min(p.opts.RequestTimeout, max(time.Until(deadline), time.Millisecond)))
	fl := &flight{p: p, b: b, ctx: ctx, cancel: cancel}
	if s.noStream {
		fl.answer(streamResult{err: errNoStream})
		return fl
	}
	addr := s.addr
	if addr == "" {
		addr = p.c.bootstrap()
	}
	ps, err := p.streams.get(addr)
	if err != nil {
		if err != ErrClosed {
			err = errNoStream // unary calls will do
		}
		fl.answer(streamResult{err: err})
		return fl
	}
	req := &logdv1.ProduceRequest{Topic: s.tp.topic, Partition: &s.tp.partition, Batch: b.encoded, Acks: p.acks, RequestId: p.reqID.Add(1)}
	fl.ps, fl.reqID = ps, req.RequestId
	res, err := ps.start(req)
	if err != nil {
		fl.answer(streamResult{err: err})
		return fl
	}
	fl.res = res
	return fl
}

// answer records the attempt's outcome and frees its slot.
func (fl *flight) answer(r streamResult) {
	fl.resp, fl.err = r.resp, r.err
	if fl.err == nil {
		fl.err = produceError(r.resp)
	}
	fl.answered = true
	fl.cancel()
	<-fl.p.inflight
}

// expire gives up waiting for the answer (the request may still append).
func (fl *flight) expire() {
	fl.ps.forget(fl.reqID)
	fl.answer(streamResult{err: contextStatus(fl.ctx.Err())})
}

// wait waits for the answer, or the attempt's timeout.
func (fl *flight) wait() {
	if fl.answered {
		return
	}
	select {
	case r := <-fl.res:
		fl.answer(r)
	case <-fl.ctx.Done():
		fl.expire()
	}
}

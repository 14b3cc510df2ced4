package server

import (
	"context"
	"math/bits"
	"time"

	"google.golang.org/grpc/mem"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A subscriber that does not read costs only its own stream:
//
//   - Subscriptions draw on a budget of their own (subscribeBudgetBytes),
//     apart from Fetch's, so no number of them can hold up a Fetch.
//   - A message is charged to that budget from its read until gRPC has
//     sent it on: its read memory and gRPC's encoded copy, which the
//     stream's flow-control window keeps queued until the client reads.
//   - Each message is at most a fair share of the budget: a quarter of it
//     divided among the open subscriptions (a stream may hold two
//     messages, each charged twice), and never more than the client asked
//     for. A new subscription starts at minSubscribeBytes and doubles with
//     every message its client takes, so a client that never reads holds
//     little.
//   - A Send that waits longer than the send timeout (the client read
//     nothing while a message waited for it) ends the stream with
//     RESOURCE_EXHAUSTED, reason SLOW_SUBSCRIBER; the client may subscribe
//     again from the offset in the status, like NATS ends a slow consumer.
//     Until then the stream holds no more than its share.
//
// Memory for subscriptions is then subscribeBudgetBytes, whatever the
// number of subscribers, plus what gRPC still queues for streams that hold
// no charge: at most one message of its share for a stream that waits (for
// records, or for budget), and for one ended for being slow, until its
// client reads or its connection closes.
const (
	subscribeBudgetBytes = 64 << 20
	minSubscribeBytes    = 32 << 10
	// messageOverhead is what a message's encoding adds to its batches,
	// left out of each message's size so that the encoding fits the power
	// of two messagePool gives it (a message of exactly 64 KiB of batches
	// would take a 128 KiB buffer).
	messageOverhead = 1 << 10
	// holdWhileWaiting is how long a stream waiting for budget keeps the
	// charge of its last message.
	holdWhileWaiting = time.Second
	// DefaultSendTimeout is how long a subscriber may leave a message
	// unread before the server ends its stream.
	DefaultSendTimeout = 30 * time.Second
)

// messagePool holds the buffers gRPC encodes messages into. Its tiers are
// powers of two up to 8 MiB: gRPC's default pool jumps from 32 KiB to
// 1 MiB, so every message between those sizes would take 1 MiB while it
// waits in a stream's queue, and a flood of non-reading subscribers with
// messages of their fair share would hold many times that share.
var messagePool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23)
	if err != nil {
		panic(err) // the exponents are constants
	}
	return p
}()

// Subscribe streams batches from an offset until the client goes away.
func (s *Server) Subscribe(req *pb.SubscribeRequest, stream pb.Log_SubscribeServer) error {
	r, err := s.b.OpenReader(stream.Context(), principal(stream.Context()), req.Topic, req.Partition, req.Offset, int(req.MaxBytes))
	if err != nil {
		return toStatus(err)
	}
	defer r.Close()
	s.subscribers.Add(1)
	defer s.subscribers.Add(-1)
	sub := &subscription{s: s, stream: stream, r: r, off: req.Offset, decode: req.Decode,
		maxBytes: min(r.MaxBytes(), maxSubscribeBytes), size: minSubscribeBytes}
	defer sub.releaseSent()
	return sub.run(stream.Context())
}

// subscription is one Subscribe stream's state.
type subscription struct {
	s        *Server
	stream   pb.Log_SubscribeServer
	r        *broker.Reader
	off      int64 // the next offset to send
	decode   bool
	maxBytes int // what the client asked for a message, capped
	size     int // the next message's size before the fair share: grows as the client reads
	// sent is the charge of the last message sent, which gRPC may hold
	// (queued behind the stream's flow-control window) until the next Send
	// returns: Send waits while more than gRPC's 64 KiB write quota of the
	// stream's earlier messages is unsent.
	sent int64
}

func (sub *subscription) run(ctx context.Context) error {
	s := sub.s
	for {
		changed := sub.r.Changed()
		resp, charge, err := sub.read(ctx)
		if err != nil {
			return toStatus(err)
		}
		if len(resp.Batches) > 0 {
			err := sub.send(resp)
			// The message before this one has left gRPC's queue.
			sub.releaseSent()
			sub.sent = charge
			if err != nil {
				return err
			}
			sub.off = resp.NextOffset
			sub.size = min(2*sub.size, sub.maxBytes)
			continue
		}
		s.subBudget.Release(charge)
		// A stream waiting for records holds no budget (what gRPC still
		// queues of its last message is at most that message's share).
		sub.releaseSent()
		select {
		case <-changed:
			if err := sub.r.StillServed(); err != nil {
				return toStatus(err)
			}
		case <-ctx.Done():
			return toStatus(ctx.Err())
		case <-s.b.Done():
			return toStatus(kind.ErrShuttingDown)
		}
	}
}

// read reads the next message under the subscriptions' budget and returns
// it with what it is charged (see messageCharge). A message larger than
// asked for (a batch larger than the stream's share) is read again once
// its whole charge is held, rather than held uncharged while waiting.
func (sub *subscription) read(ctx context.Context) (*pb.FetchResponse, int64, error) {
	b := sub.s.subBudget
	want := sub.messageBytes()
	for {
		charge := min(messageCharge(want, sub.decode), b.Bytes)
		if err := sub.acquire(ctx, charge); err != nil {
			return nil, 0, err
		}
		resp, err := sub.readAt(want)
		if err != nil {
			b.Release(charge)
			return nil, 0, err
		}
		need := min(messageCharge(len(resp.Batches), sub.decode), b.Bytes)
		switch {
		case need <= charge:
			b.Release(charge - need)
			return resp, need, nil
		case b.TryAcquire(need - charge):
			return resp, need, nil
		}
		b.Release(charge)
		want = len(resp.Batches)
	}
}

// messageCharge is what a message of n bytes of batches costs while it is
// read and sent: the read buffer, and gRPC's encoded copy in a buffer of
// the next power of two (messagePool); decoded, the records copy the
// batches again and are encoded too.
func messageCharge(n int, decode bool) int64 {
	if decode {
		return int64(2*n) + pow2Ceil(2*n+messageOverhead)
	}
	return int64(n) + pow2Ceil(n+messageOverhead)
}

func pow2Ceil(n int) int64 { return 1 << bits.Len(uint(n-1)) }

// acquire takes n bytes of the budget. Waiting, the stream keeps the
// charge of its last message (gRPC may still hold it) for up to a second;
// then it lets go of it, so that streams waiting on each other's charges
// cannot wait forever.
func (sub *subscription) acquire(ctx context.Context, n int64) error {
	b := sub.s.subBudget
	if b.TryAcquire(n) {
		return nil
	}
	if sub.sent > 0 {
		wctx, cancel := context.WithTimeout(ctx, holdWhileWaiting)
		err := b.Acquire(wctx, n)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		sub.releaseSent()
	}
	return b.Acquire(ctx, n)
}

// messageBytes is the size of the next message: what the stream has
// grown to, within its fair share of the budget, rounded down to a power
// of two less messageOverhead.
func (sub *subscription) messageBytes() int {
	n := max(sub.s.subscribers.Load(), 1)
	share := int(sub.s.subBudget.Bytes / (4 * n))
	m := max(min(sub.size, max(share, minSubscribeBytes)), 1)
	p := 1 << (bits.Len(uint(m)) - 1)
	if p <= 2*messageOverhead {
		// A client that asks for messages smaller than the encoding's
		// overhead gets one batch per message (a read returns at least
		// one whole batch), never a negative size.
		return m
	}
	return p - messageOverhead
}

func (sub *subscription) releaseSent() {
	sub.s.subBudget.Release(sub.sent)
	sub.sent = 0
}

// send sends resp, or ends the stream when the client leaves it unread
// for the send timeout. gRPC's Send blocks while the stream's flow-control
// window is full and cannot be interrupted from the handler but by
// returning (which cancels the stream and so the Send); so it runs in a
// goroutine of its own, which ends with the stream.
func (sub *subscription) send(resp *pb.FetchResponse) error {
	done := make(chan error, 1)
	go func() { done <- sub.stream.Send(resp) }()
	t := time.NewTimer(sub.s.cfg.SendTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		sub.s.m.slowSubscribers.Inc()
		sub.s.logger.Debug("ended a subscription whose client read nothing", "partition", sub.r.Name(),
			"offset", sub.off, "send_timeout", sub.s.cfg.SendTimeout)
		return slowSubscriber(sub.r.Name(), sub.off, sub.s.cfg.SendTimeout.String())
	}
}

// readAt reads the next message, of at most want bytes of batches.
func (sub *subscription) readAt(want int) (*pb.FetchResponse, error) {
	fp, err := sub.r.Read(sub.off, want)
	if err != nil {
		return nil, err
	}
	return fetchResponse(fp, sub.off, sub.decode)
}

package server

import (
	"context"
	"math/bits"
	"time"

	"google.golang.org/grpc/mem"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Subscribe streams draw on the broker's subscription budget
// (broker.Subscriptions: a fair share each, growing as the client reads).
// What is gRPC's is the cost of a message (subscribeCost: its read and its
// encoded copy in a buffer of messagePool) and the end of a stream whose
// client does not read: a Send that waits longer than the send timeout
// (the client read nothing while a message waited for it) ends the stream
// with RESOURCE_EXHAUSTED, reason SLOW_SUBSCRIBER; the client may
// subscribe again from the offset in the status, like NATS ends a slow
// consumer. Until then the stream holds no more than its share; once
// ended, what gRPC still queues for it is freed when its client reads or
// its connection closes.
const (
	subscribeBudgetBytes = 64 << 20
	// messageOverhead is what a message's encoding adds to its batches,
	// left out of each message's size so that the encoding fits the power
	// of two messagePool gives it (a message of exactly 64 KiB of batches
	// would take a 128 KiB buffer).
	messageOverhead = 1 << 10
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
	committed, err := readCommitted(req.Isolation)
	if err != nil {
		return err
	}
	r, err := s.b.OpenReader(stream.Context(), principal(stream.Context()), req.Topic, req.Partition, req.Offset, int(req.MaxBytes))
	if err != nil {
		return err
	}
	defer r.Close()
	if committed {
		r.ReadCommitted()
	}
	sub := &subscription{s: s, stream: stream, r: r, off: req.Offset, decode: req.Decode,
		pace: s.subs.Subscribe(r, req.Decode, min(r.MaxBytes(), maxSubscribeBytes))}
	defer sub.pace.Close()
	return sub.run(stream.Context())
}

// subscription is one Subscribe stream's state.
type subscription struct {
	s      *Server
	stream pb.Log_SubscribeServer
	r      *broker.Reader
	pace   *broker.Subscription
	off    int64 // the next offset to send
	decode bool
}

// run sends the stream's messages as the broker's pace reads them
// (broker.Subscription.Wait: it waits for records and ends with the
// stream's context, the topic's deletion or the broker's shutdown).
func (sub *subscription) run(ctx context.Context) error {
	for {
		fp, err := sub.pace.Wait(ctx, sub.off)
		if err != nil {
			return err
		}
		resp, err := fetchResponse(fp, sub.off, sub.decode)
		if err != nil {
			return err
		}
		err = sub.send(resp)
		sub.pace.Sent()
		if err != nil {
			return err
		}
		sub.off = resp.NextOffset
	}
}

// subscribeCost is broker.SubscriptionCost for gRPC's messages.
type subscribeCost struct{}

// Charge is what a message of n bytes of batches costs while it is read
// and sent: the read buffer, and gRPC's encoded copy in a buffer of the
// next power of two (messagePool); decoded, the records copy the batches
// again and are encoded too.
func (subscribeCost) Charge(n int, decode bool) int64 {
	if decode {
		return int64(2*n) + pow2Ceil(2*n+messageOverhead)
	}
	return int64(n) + pow2Ceil(n+messageOverhead)
}

func pow2Ceil(n int) int64 { return 1 << bits.Len(uint(n-1)) }

// Size rounds m down to a power of two less messageOverhead, so the
// message's encoding fits that power of two.
func (subscribeCost) Size(m int) int {
	p := 1 << (bits.Len(uint(m)) - 1)
	if p <= 2*messageOverhead {
		// A client that asks for messages smaller than the encoding's
		// overhead gets one batch per message (a read returns at least
		// one whole batch), never a negative size.
		return m
	}
	return p - messageOverhead
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

package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/logd/logd/internal/kind"
)

// A subscriber that does not read costs only its own stream:
//
//   - Subscriptions draw on a budget of their own (Subscriptions), apart
//     from Fetch's, so no number of them can hold up a Fetch.
//   - A message is charged to that budget from its read until the
//     front-end has sent it on: its read memory and the front-end's
//     encoded copy (SubscriptionCost.Charge), which a stream's flow
//     control may keep queued until the client reads.
//   - Each message is at most a fair share of the budget: a quarter of it
//     divided among the open subscriptions (a stream may hold two
//     messages, each charged twice), and never more than the client asked
//     for. A new subscription starts at minSubscribeBytes and doubles with
//     every message its client takes, so a client that never reads holds
//     little.
//
// Memory for subscriptions is then the budget, whatever the number of
// subscribers, plus what the front-end still queues for streams that hold
// no charge: at most one message of its share for a stream that waits
// (for records, or for budget). The front-end ends a stream whose client
// reads nothing for long (gRPC's send timeout), which then holds nothing.
const (
	minSubscribeBytes = 32 << 10
	// holdWhileWaiting is how long a stream waiting for budget keeps the
	// charge of its last message.
	holdWhileWaiting = time.Second
)

// SubscriptionCost is how a front-end's subscription messages hold memory.
type SubscriptionCost interface {
	// Charge is what a message of n bytes of batches holds from its read
	// until the front-end has sent it on (decode: its records are decoded
	// and copied).
	Charge(n int, decode bool) int64
	// Size is how many bytes of batches to read for a message of at most
	// m bytes (m > 0), so that its encoding fits the front-end's buffers.
	Size(m int) int
}

// Subscriptions is the budget a front-end's subscriptions share.
type Subscriptions struct {
	budget *MemBudget
	cost   SubscriptionCost
	open   atomic.Int64
}

// NewSubscriptions is a budget of n bytes for subscriptions whose
// messages cost what cost says.
func NewSubscriptions(n int64, cost SubscriptionCost) *Subscriptions {
	return &Subscriptions{budget: NewMemBudget(n), cost: cost}
}

// Subscription is one subscription's pace: the size of its next message,
// and the charges it holds. One goroutine uses it.
type Subscription struct {
	subs     *Subscriptions
	r        *Reader
	decode   bool
	maxBytes int   // what the client asked for a message, capped
	size     int   // the next message's size before the fair share: grows as the client reads
	held     int64 // the charge of the message Next read, not yet sent
	// sent is the charge of the last message sent, which the front-end
	// may hold (queued behind the stream's flow-control window) until its
	// next send returns.
	sent int64
}

// Subscribe paces reads of r for one stream, of at most maxBytes per
// message. Close ends it.
func (s *Subscriptions) Subscribe(r *Reader, decode bool, maxBytes int) *Subscription {
	s.open.Add(1)
	return &Subscription{subs: s, r: r, decode: decode, maxBytes: maxBytes, size: minSubscribeBytes}
}

// Next reads the message from off under the budget, charged until Sent
// or Idle. A message larger than asked for (a batch larger than the
// stream's share) is read again once its whole charge is held, rather
// than held uncharged while waiting.
func (sub *Subscription) Next(ctx context.Context, off int64) (FetchedPartition, error) {
	b, cost := sub.subs.budget, sub.subs.cost
	want := sub.messageBytes()
	for {
		charge := min(cost.Charge(want, sub.decode), b.Bytes)
		if err := sub.acquire(ctx, charge); err != nil {
			return FetchedPartition{}, err
		}
		fp, err := sub.r.Read(off, want)
		if err != nil {
			b.Release(charge)
			return FetchedPartition{}, err
		}
		need := min(cost.Charge(len(fp.Batches), sub.decode), b.Bytes)
		switch {
		case need <= charge:
			b.Release(charge - need)
			sub.held = need
			return fp, nil
		case b.TryAcquire(need - charge):
			sub.held = need
			return fp, nil
		}
		b.Release(charge)
		want = len(fp.Batches)
	}
}

// Wait is Next, waiting for records while there are none at off: it
// returns a message with batches (or none, past batches a read_committed
// reader does not see), or the error that ends the stream (its
// context's; the topic deleted since the reader opened; kind.ErrShuttingDown
// when the broker shuts down). While it waits the stream holds no budget
// (Idle).
func (sub *Subscription) Wait(ctx context.Context, off int64) (FetchedPartition, error) {
	r := sub.r
	for {
		changed := r.Changed()
		fp, err := sub.Next(ctx, off)
		// A read_committed read whose batches were all left out (markers,
		// aborted transactions) is answered too: without batches, its
		// NextOffset moves the stream past them.
		if err != nil || len(fp.Batches) > 0 || fp.NextOffset > off {
			return fp, err
		}
		sub.Idle()
		select {
		case <-changed:
			if err := r.StillServed(); err != nil {
				return FetchedPartition{}, err
			}
		case <-ctx.Done():
			return FetchedPartition{}, ctx.Err()
		case <-r.b.Done():
			return FetchedPartition{}, kind.ErrShuttingDown
		}
	}
}

// Sent says the message Next read was handed on (the front-end's send
// returned, so the message before it has left the front-end's queue); the
// next message may be twice as large.
func (sub *Subscription) Sent() {
	sub.releaseSent()
	sub.sent, sub.held = sub.held, 0
	sub.size = min(2*sub.size, sub.maxBytes)
}

// Idle says Next found nothing to send: a stream waiting for records
// holds no budget (what the front-end still queues of its last message
// is at most that message's share).
func (sub *Subscription) Idle() {
	sub.subs.budget.Release(sub.held)
	sub.held = 0
	sub.releaseSent()
}

// Close releases what the subscription holds and leaves the budget's
// subscriptions.
func (sub *Subscription) Close() {
	sub.Idle()
	sub.subs.open.Add(-1)
}

// acquire takes n bytes of the budget. Waiting, the stream keeps the
// charge of its last message (the front-end may still hold it) for up to
// a second; then it lets go of it, so that streams waiting on each
// other's charges cannot wait forever.
func (sub *Subscription) acquire(ctx context.Context, n int64) error {
	b := sub.subs.budget
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
// grown to, within its fair share of the budget, fitted to the
// front-end's buffers.
func (sub *Subscription) messageBytes() int {
	n := max(sub.subs.open.Load(), 1)
	share := int(sub.subs.budget.Bytes / (4 * n))
	return sub.subs.cost.Size(max(min(sub.size, max(share, minSubscribeBytes)), 1))
}

func (sub *Subscription) releaseSent() {
	sub.subs.budget.Release(sub.sent)
	sub.sent = 0
}

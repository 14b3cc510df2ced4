package client

import (
	"context"
	"time"
)

// Ack is the acknowledgement of one produced record.
type Ack struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	// Duplicate is true when the record's batch was a retry the server had
	// already appended; Offset is the original one.
	Duplicate bool
}

// Future is the pending outcome of one Produce. It completes exactly once.
type Future struct {
	done chan struct{}
	cb   func(Ack, error)
	ack  Ack
	err  error
}

// newFuture returns a Future completing through cb, or, without one,
// through a channel (Done, Get). ProduceFunc's futures never reach the
// caller, so they need no channel: one per record is measurable at a
// million records a second.
func newFuture(cb func(Ack, error)) *Future {
	if cb != nil {
		return &Future{cb: cb}
	}
	return &Future{done: make(chan struct{})}
}

// complete records the outcome and runs the callback, if any.
func (f *Future) complete(ack Ack, err error) {
	f.ack, f.err = ack, err
	if f.done != nil {
		close(f.done)
	}
	if f.cb != nil {
		f.cb(ack, err)
	}
}

// Done is closed when the record was acknowledged or failed.
func (f *Future) Done() <-chan struct{} { return f.done }

// Get waits for the outcome. A ctx error means only that Get stopped waiting:
// the record may still be acknowledged later.
func (f *Future) Get(ctx context.Context) (Ack, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	}
}

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

func newFuture(cb func(Ack, error)) *Future {
	return &Future{done: make(chan struct{}), cb: cb}
}

// complete records the outcome and runs the callback, if any.
func (f *Future) complete(ack Ack, err error) {
	f.ack, f.err = ack, err
	close(f.done)
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

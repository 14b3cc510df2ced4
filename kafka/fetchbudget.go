package kafka

import (
	"context"
	"sync"

	"github.com/logd/logd/broker"
)

// connBudget bounds the bytes of fetch responses one connection holds:
// read from the log and not yet written to its client
// (Config.MaxConnFetchBytes).
//
// The node's read budget (broker.MemBudget) is held only while a fetch
// reads; the response's memory then counts here until it is written. So a
// client that does not read its responses holds its own connection's
// share and nothing of the node's: other connections, and the gRPC and
// HTTP reads, are served as before.
//
// The reader reserves a fetch's bytes before starting it, in request
// order, so a fetch waits only on responses of earlier requests; those
// are written in order without waiting on it, so pipelining cannot
// deadlock. A fetch larger than the bound runs when nothing else is held.
type connBudget struct {
	mu    sync.Mutex
	limit int64
	held  int64
	freed chan struct{} // closed, and replaced, when held falls
}

func newConnBudget(limit int) *connBudget {
	return &connBudget{limit: int64(limit), freed: make(chan struct{})}
}

// reserve takes n bytes, waiting while they would exceed the bound and
// something is held; it fails only when ctx ends (the connection closes).
// A nil budget (a conn built by hand in a test) bounds nothing.
func (b *connBudget) reserve(ctx context.Context, n int64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	for b.held > 0 && b.held+n > b.limit {
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
	}
	b.held += n
	b.mu.Unlock()
	return nil
}

// adjust changes what is held by d: a fetch's actual size replaces its
// reservation, and a written response returns its bytes (-size).
func (b *connBudget) adjust(d int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held += d
	if d < 0 {
		close(b.freed)
		b.freed = make(chan struct{})
	}
}

// fetchEstimate is what a fetch may read (as the core bounds it): the sum
// of its partitions' maxima, at most the response's.
func fetchEstimate(r FetchRequest) int64 {
	total := r.MaxBytes
	if total <= 0 || total > broker.MaxFetchBytes {
		total = broker.MaxFetchBytes
	}
	asked := 0
	for _, p := range r.Partitions {
		switch {
		case p.MaxBytes <= 0:
			asked += broker.DefaultFetchBytes
		default:
			asked += min(p.MaxBytes, broker.MaxFetchBytes)
		}
		if asked >= total {
			return int64(total)
		}
	}
	return int64(asked)
}

// fetchedBytes is the memory a fetch's answer holds.
func fetchedBytes(res FetchResult) int64 {
	var n int64
	for _, p := range res.Partitions {
		n += int64(cap(p.Batches))
	}
	return n
}

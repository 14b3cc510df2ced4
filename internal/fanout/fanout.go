// Package fanout runs a bounded number of calls at once: the one fan-out
// of the broker's requests over many partitions (a describe asking each
// partition's leader, ListOffsets) and of a replication node closing its
// replicas. A call never outlives Run, and once the context ends no more
// start.
package fanout

import (
	"context"
	"sync"
)

// Run calls f(ctx, i) for each i in [0, n), at most limit calls at a time,
// and returns once every call it started has returned: no goroutine it
// starts outlives it. Once ctx ends it starts no more calls (f must return
// promptly when ctx ends, or Run waits for it). Each f owns its i: writing
// a result to a slice's element i needs no lock, and is seen by Run's
// caller.
//
// errgroup.Group with SetLimit would block its Go while the calls run,
// deaf to ctx, then start one more; the slots here are taken under a
// select on ctx.
func Run(ctx context.Context, n, limit int, f func(ctx context.Context, i int)) {
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil { // both were ready and select chose the slot
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			f(ctx, i)
		})
	}
}

// Package fanout runs a bounded number of calls at once: the one fan-out
// of the broker's requests over many partitions (a describe asking each
// partition's leader, ListOffsets) and of a replication node closing its
// replicas. A call never outlives Run, and once the context ends no more
// start.
package fanout

import (
	"context"
	"sync"
	"sync/atomic"
)

// Run calls f(ctx, i) for each i in [0, n), in order of i, at most limit
// calls at a time (a limit below 1 is 1), and returns once every call it
// started has returned: no goroutine it starts outlives it. Once ctx ends
// it starts no more calls (f must return promptly when ctx ends, or Run
// waits for it). Each f owns its i: writing a result to a slice's element
// i needs no lock, and is seen by Run's caller.
//
// The calls run on min(n, limit) goroutines, each taking the next i until
// none is left: a cluster node's reconcile passes over each of its
// replicas every 2 s, and a goroutine per call, each growing its own
// stack, was a tenth of a node's idle CPU at 10,000 partitions.
// errgroup.Group with SetLimit would block its Go while the calls run,
// deaf to ctx, then start one more.
func Run(ctx context.Context, n, limit int, f func(ctx context.Context, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, max(limit, 1)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(ctx, i)
			}
		})
	}
	wg.Wait()
}

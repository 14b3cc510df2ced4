package fanout

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/fanout/fanouttest"
)

func TestRunRunsLimitCallsAtOnceAndNeverMore(t *testing.T) {
	for _, tc := range []struct{ n, limit int }{{200, 5}, {32, 32}, {10, 32}, {1, 1}, {50, 1}} {
		t.Run(fmt.Sprintf("n=%d,limit=%d", tc.n, tc.limit), func(t *testing.T) {
			g := fanouttest.NewGate(min(tc.n, tc.limit))
			seen := make([]atomic.Int32, tc.n)
			Run(context.Background(), tc.n, tc.limit, func(ctx context.Context, i int) {
				g.Enter(t)
				defer g.Leave()
				seen[i].Add(1)
			})
			if g.Max() > tc.limit {
				t.Errorf("%d calls inside at once, limit %d", g.Max(), tc.limit)
			}
			if in := g.Inside(); in != 0 {
				t.Errorf("%d calls still inside after Run returned", in)
			}
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Errorf("f(%d) called %d times, want 1", i, c)
				}
			}
		})
	}
}

func TestRunZero(t *testing.T) {
	Run(context.Background(), 0, 4, func(context.Context, int) { t.Error("f called for n=0") })
}

// Cancelling stops the fan-out from starting calls; it returns once the
// running ones (which watch ctx) have, and leaves no goroutine behind.
func TestRunCancelStartsNoMoreAndLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	const limit = 4
	var started, running atomic.Int32
	allIn := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 100, limit, func(ctx context.Context, i int) {
			running.Add(1)
			defer running.Add(-1)
			if started.Add(1) == limit {
				close(allIn)
			}
			<-ctx.Done() // a call that runs until cancelled
		})
	}()
	select {
	case <-allIn:
	case <-time.After(fanouttest.HangGuard):
		t.Fatalf("only %d of %d calls started", started.Load(), limit)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(fanouttest.HangGuard):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if n := started.Load(); n != limit {
		t.Errorf("%d calls started, want %d: it went on after the cancel", n, limit)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d calls still running after Run returned", n)
	}
	fanouttest.WaitGoroutines(t, before)
}

func TestRunDoneContextStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Run(ctx, 10, 4, func(context.Context, int) { t.Error("f called with a done context") })
}

package fanout

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangGuard only ends a test that would otherwise hang (a fan-out that
// runs its calls one after the other never lets them all in at once): it
// is no timing target.
const hangGuard = 30 * time.Second

// gate lets callers in and counts them: the first want callers wait
// inside until want are inside at once, which only calls running
// concurrently can reach. It records the most ever inside.
type gate struct {
	want    int
	mu      sync.Mutex
	in, max int
	calls   int
	full    chan struct{} // closed once want are inside at once
}

func newGate(want int) *gate { return &gate{want: want, full: make(chan struct{})} }

func (g *gate) enter(t *testing.T) {
	g.mu.Lock()
	g.in++
	g.calls++
	first := g.calls <= g.want
	g.max = max(g.max, g.in)
	if g.in == g.want {
		g.open()
	}
	g.mu.Unlock()
	if first {
		select {
		case <-g.full:
		case <-time.After(hangGuard):
			t.Errorf("never %d calls inside at once: they do not run concurrently", g.want)
			g.mu.Lock()
			g.open() // the others need not wait too
			g.mu.Unlock()
		}
	}
	runtime.Gosched() // let others in while this one is inside
}

// open lets every caller through; g.mu is held.
func (g *gate) open() {
	select {
	case <-g.full:
	default:
		close(g.full)
	}
}

func (g *gate) leave() {
	g.mu.Lock()
	g.in--
	g.mu.Unlock()
}

func TestRunRunsLimitCallsAtOnceAndNeverMore(t *testing.T) {
	for _, tc := range []struct{ n, limit int }{{200, 5}, {32, 32}, {10, 32}, {1, 1}, {50, 1}} {
		t.Run(fmt.Sprintf("n=%d,limit=%d", tc.n, tc.limit), func(t *testing.T) {
			g := newGate(min(tc.n, tc.limit))
			seen := make([]atomic.Int32, tc.n)
			Run(context.Background(), tc.n, tc.limit, func(ctx context.Context, i int) {
				g.enter(t)
				defer g.leave()
				seen[i].Add(1)
			})
			if g.max > tc.limit {
				t.Errorf("%d calls inside at once, limit %d", g.max, tc.limit)
			}
			if g.in != 0 {
				t.Errorf("%d calls still inside after Run returned", g.in)
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
	case <-time.After(hangGuard):
		t.Fatalf("only %d of %d calls started", started.Load(), limit)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if n := started.Load(); n != limit {
		t.Errorf("%d calls started, want %d: it went on after the cancel", n, limit)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d calls still running after Run returned", n)
	}
	waitGoroutines(t, before)
}

func TestRunDoneContextStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Run(ctx, 10, 4, func(context.Context, int) { t.Error("f called with a done context") })
}

// waitGoroutines fails t if the goroutines do not fall back to before
// (goroutines that have returned may take a moment to be gone).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

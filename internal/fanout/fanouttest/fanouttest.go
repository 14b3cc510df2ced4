// Package fanouttest holds what the tests of bounded fan-outs (package
// fanout and its callers) share: a Gate that only calls running
// concurrently get through, and a check that no goroutine outlives them.
package fanouttest

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// HangGuard only ends a test that would otherwise hang (a fan-out that
// runs its calls one after the other never lets them all in at once): it
// is no timing target.
const HangGuard = 30 * time.Second

// Gate lets callers in and counts them: the first want callers wait
// inside until want are inside at once, which only calls running
// concurrently can reach. It records the most ever inside.
type Gate struct {
	want  int
	mu    sync.Mutex
	in    int
	max   int
	calls int
	full  chan struct{} // closed once want are inside at once
}

// NewGate returns a Gate that waits for want callers inside at once.
func NewGate(want int) *Gate { return &Gate{want: want, full: make(chan struct{})} }

// Max is the most callers ever inside at once.
func (g *Gate) Max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// Inside is how many callers are inside now.
func (g *Gate) Inside() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.in
}

// Enter lets a caller in (Leave lets it out).
func (g *Gate) Enter(t testing.TB) {
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
		case <-time.After(HangGuard):
			t.Errorf("never %d calls inside at once: they do not run concurrently", g.want)
			g.mu.Lock()
			g.open() // the others need not wait too
			g.mu.Unlock()
		}
	}
	runtime.Gosched() // let others in while this one is inside
}

// open lets every caller through; g.mu is held.
func (g *Gate) open() {
	select {
	case <-g.full:
	default:
		close(g.full)
	}
}

// Leave lets a caller out.
func (g *Gate) Leave() {
	g.mu.Lock()
	g.in--
	g.mu.Unlock()
}

// WaitGoroutines fails t if the goroutines do not fall back to before
// (goroutines that have returned may take a moment to be gone).
func WaitGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(HangGuard)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package replication

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedBarrier is a barrier whose rounds finish when the test says.
type gatedBarrier struct {
	started chan int   // the round's number, as it starts
	finish  chan error // one per round
	n       atomic.Int32
}

func newGatedBarrier() *gatedBarrier {
	return &gatedBarrier{started: make(chan int, 16), finish: make(chan error)}
}

func (g *gatedBarrier) barrier(time.Duration) error {
	g.started <- int(g.n.Add(1))
	return <-g.finish
}

func confirmAsync(ri *ReadIndex) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- ri.Confirm(context.Background()) }()
	return ch
}

func notYet(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s answered (%v) before its barrier finished", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

// A read that arrives while a barrier runs must wait for one started after
// it: the running one may have been started (and answered by followers)
// before the read came.
func TestReadIndexWaitsForABarrierStartedAfterTheRead(t *testing.T) {
	g := newGatedBarrier()
	ri := newReadIndex(g.barrier, time.Second)

	first := confirmAsync(ri)
	if n := <-g.started; n != 1 {
		t.Fatalf("round %d started, want 1", n)
	}
	second := confirmAsync(ri)
	third := confirmAsync(ri)
	notYet(t, second, "a read that came during round 1")

	g.finish <- nil // round 1
	if err := <-first; err != nil {
		t.Fatalf("first read: %v", err)
	}
	notYet(t, second, "a read that came during round 1, after round 1")
	if n := <-g.started; n != 2 {
		t.Fatalf("round %d started, want 2", n)
	}
	g.finish <- nil // round 2 serves both reads that came during round 1
	for _, ch := range []<-chan error{second, third} {
		if err := <-ch; err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	select {
	case n := <-g.started:
		t.Fatalf("round %d started with no read waiting", n)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestReadIndexReportsTheBarriersError(t *testing.T) {
	g := newGatedBarrier()
	ri := newReadIndex(g.barrier, time.Second)
	lost := errors.New("leadership lost")
	ch := confirmAsync(ri)
	<-g.started
	g.finish <- lost
	if err := <-ch; !errors.Is(err, lost) {
		t.Fatalf("Confirm = %v, want %v", err, lost)
	}
	// The next read starts a new barrier.
	ch = confirmAsync(ri)
	<-g.started
	g.finish <- nil
	if err := <-ch; err != nil {
		t.Fatalf("Confirm after a failed round: %v", err)
	}
}

func TestReadIndexConfirmEndsWithTheContext(t *testing.T) {
	g := newGatedBarrier()
	ri := newReadIndex(g.barrier, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- ri.Confirm(ctx) }()
	<-g.started
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("Confirm = %v, want context.Canceled", err)
	}
	g.finish <- nil // the round ends; nothing leaks
}

// Many concurrent reads share few barriers, and each gets an answer.
func TestReadIndexSharesBarriers(t *testing.T) {
	var rounds atomic.Int32
	ri := newReadIndex(func(time.Duration) error {
		rounds.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}, time.Second)
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ri.Confirm(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := rounds.Load(); n >= 200 {
		t.Fatalf("%d barriers for 200 concurrent reads: not shared", n)
	}
}

// Start runs a barrier after the call without waiting for it (the
// barriers here block until the test finishes them), and shares rounds as
// Confirm does: two Starts while one round runs queue one more.
func TestReadIndexStartDoesNotWait(t *testing.T) {
	g := newGatedBarrier()
	ri := newReadIndex(g.barrier, time.Second)
	ri.Start()
	if n := <-g.started; n != 1 {
		t.Fatalf("round %d started, want 1", n)
	}
	ri.Start()
	ri.Start()
	g.finish <- nil
	if n := <-g.started; n != 2 {
		t.Fatalf("round %d started, want 2", n)
	}
	g.finish <- errors.New("lost")
	select {
	case n := <-g.started:
		t.Fatalf("round %d started: Starts while one ran were not shared", n)
	case <-time.After(20 * time.Millisecond):
	}
}

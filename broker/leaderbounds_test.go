package broker

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// The fan-out itself is tested in internal/fanout; these test what
// leaderBounds does over it. gate and waitGoroutines are a copy of
// internal/fanout's test helpers.

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

// leaderLog is a leader's answer for partition id: bounds derived from id.
func leaderLog(id int32) offsets.PartitionLog {
	return offsets.LogFuncs{
		Start: func() int64 { return 1000 + int64(id) },
		HW:    func() int64 { return 2000 + int64(id) },
	}
}

// describeParts returns n partitions and their infos holding "local"
// bounds (-id, -id-1) that a lookup's answer replaces.
func describeParts(n int) ([]*partition.Partition, []PartitionInfo) {
	parts := make([]*partition.Partition, n)
	pis := make([]PartitionInfo, n)
	for i := range n {
		parts[i] = &partition.Partition{Topic: "t", ID: int32(i)}
		pis[i] = PartitionInfo{ID: int32(i), LogStart: -int64(i), HighWatermark: -int64(i) - 1}
	}
	return parts, pis
}

func checkBounds(t *testing.T, pis []PartitionInfo, fromLeader func(id int32) bool) {
	t.Helper()
	for i, pi := range pis {
		id := int32(i)
		wantStart, wantHW := -int64(i), -int64(i)-1
		if fromLeader(id) {
			wantStart, wantHW = 1000+int64(i), 2000+int64(i)
		}
		if pi.ID != id || pi.LogStart != wantStart || pi.HighWatermark != wantHW {
			t.Errorf("partition %d: id %d, bounds [%d, %d], want [%d, %d]", i, pi.ID, pi.LogStart, pi.HighWatermark, wantStart, wantHW)
		}
	}
}

// A describe asks describeFanOut leaders at once (never more), and each
// partition's answer lands in its own place whatever order they come in.
func TestLeaderBoundsAsksLeadersConcurrentlyInPartitionOrder(t *testing.T) {
	const n = 1000
	parts, pis := describeParts(n)
	g := newGate(describeFanOut)
	leaderBounds(context.Background(), parts, pis, func(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
		g.enter(t)
		defer g.leave()
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("partition %d: lookup without a deadline of its own", p.ID)
		}
		return leaderLog(p.ID), nil
	}, time.Minute)
	if g.max > describeFanOut {
		t.Errorf("%d lookups at once, bound %d", g.max, describeFanOut)
	}
	checkBounds(t, pis, func(int32) bool { return true })
}

// A partition whose lookup fails keeps this replica's bounds.
func TestLeaderBoundsErrorKeepsLocalBounds(t *testing.T) {
	parts, pis := describeParts(100)
	leaderBounds(context.Background(), parts, pis, func(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
		if p.ID%3 == 1 {
			return nil, errors.New("no leader")
		}
		return leaderLog(p.ID), nil
	}, time.Minute)
	checkBounds(t, pis, func(id int32) bool { return id%3 != 1 })
}

// One partition whose leader never answers does not hold the describe
// until the caller's deadline (here it has none): its lookup ends on its
// own deadline and it keeps this replica's bounds.
func TestLeaderBoundsOneStuckPartitionTimesOutAlone(t *testing.T) {
	parts, pis := describeParts(100)
	var stuckErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		leaderBounds(context.Background(), parts, pis, func(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
			if p.ID == 7 {
				<-ctx.Done() // a leader that never answers
				stuckErr = ctx.Err()
				return nil, ctx.Err()
			}
			return leaderLog(p.ID), nil
		}, 50*time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("a stuck partition held the describe: its lookup has no deadline of its own")
	}
	if !errors.Is(stuckErr, context.DeadlineExceeded) {
		t.Errorf("stuck lookup ended with %v, want its deadline", stuckErr)
	}
	checkBounds(t, pis, func(id int32) bool { return id != 7 })
}

// Cancelling the describe ends the running lookups and starts no more:
// every partition not answered keeps this replica's bounds.
func TestLeaderBoundsCancelKeepsLocalBounds(t *testing.T) {
	before := runtime.NumGoroutine()
	parts, pis := describeParts(1000)
	ctx, cancel := context.WithCancel(context.Background())
	var asked atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		leaderBounds(ctx, parts, pis, func(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
			// The first describeFanOut partitions answer; the next ones
			// wait for the cancel, which comes once they fill every slot.
			if asked.Add(1) == 2*describeFanOut {
				cancel()
			}
			if p.ID >= describeFanOut {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return leaderLog(p.ID), nil
		}, time.Minute)
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		cancel()
		t.Fatalf("the describe did not end after its cancel (%d lookups started)", asked.Load())
	}
	if n := asked.Load(); n != 2*describeFanOut {
		t.Errorf("%d lookups started, want %d: it went on after the cancel", n, 2*describeFanOut)
	}
	checkBounds(t, pis, func(id int32) bool { return id < describeFanOut })
	waitGoroutines(t, before)
}

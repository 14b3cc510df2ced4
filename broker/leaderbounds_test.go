package broker

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"

	"github.com/logd/logd/internal/fanout/fanouttest"
)

// The fan-out itself is tested in internal/fanout; these test what
// leaderBounds does over it.

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
	g := fanouttest.NewGate(describeFanOut)
	leaderBounds(context.Background(), parts, pis, func(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
		g.Enter(t)
		defer g.Leave()
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("partition %d: lookup without a deadline of its own", p.ID)
		}
		return leaderLog(p.ID), nil
	}, time.Minute)
	if g.Max() > describeFanOut {
		t.Errorf("%d lookups at once, bound %d", g.Max(), describeFanOut)
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
	case <-time.After(fanouttest.HangGuard):
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
	case <-time.After(fanouttest.HangGuard):
		cancel()
		t.Fatalf("the describe did not end after its cancel (%d lookups started)", asked.Load())
	}
	if n := asked.Load(); n != 2*describeFanOut {
		t.Errorf("%d lookups started, want %d: it went on after the cancel", n, 2*describeFanOut)
	}
	checkBounds(t, pis, func(id int32) bool { return id < describeFanOut })
	fanouttest.WaitGoroutines(t, before)
}

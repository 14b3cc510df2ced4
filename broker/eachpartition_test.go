package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/kind"
)

// A partition answers only in a window (its group is led for a while,
// then sleeps again), and the windows of different partitions do not
// overlap: each is open during one round only. A request over all of them
// is answered all the same, each partition asked again until it answers
// and its answer kept. Before, every partition had to answer in the same
// round, which never happened: the request failed with "no leader".
func TestEachPartitionKeepsAnswersAcrossRounds(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	calls := make([]int, n)
	got := make([]int, n)
	err := eachPartition(context.Background(), n, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		calls[i]++
		if calls[i] != i+1 { // partition i answers in round i+1 alone
			return &cluster.NotLeaderError{What: "partition", Untouched: true}
		}
		got[i] = 10 + i
		return nil
	})
	if err != nil {
		t.Fatalf("eachPartition: %v", err)
	}
	for i := range n {
		if got[i] != 10+i || calls[i] != i+1 {
			t.Errorf("partition %d: answer %d after %d calls, want %d after %d (asked again once answered?)", i, got[i], calls[i], 10+i, i+1)
		}
	}
}

// An error that asking again cannot mend ends the request after one
// round, every partition asked; and a forwarded request gets one round.
func TestEachPartitionStopsOnLastingErrors(t *testing.T) {
	denied := errors.New("denied")
	var mu sync.Mutex
	calls := 0
	err := eachPartition(context.Background(), 3, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return denied
	})
	if !errors.Is(err, denied) || calls != 3 {
		t.Fatalf("lasting error: %v after %d calls, want denied after 3", err, calls)
	}
	calls = 0
	ctx := cluster.WithForwarded(context.Background())
	err = eachPartition(ctx, 3, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return kind.Errorf(kind.ErrUnavailable, "electing")
	})
	if !errors.Is(err, kind.ErrUnavailable) || calls != 3 {
		t.Fatalf("forwarded: %v after %d calls, want unavailable after one round of 3", err, calls)
	}
}

// Rounds end at half the time left before the caller's deadline, with the
// partitions' own error, not the deadline's: a client that waits 2 s for
// an answer gets one it can retry (torture seed 11's final read got
// DeadlineExceeded on every try while rounds went on for 5 s).
func TestEachPartitionLeavesTheCallerTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := eachPartition(ctx, 3, func(context.Context, int) error {
		return kind.Errorf(kind.ErrUnavailable, "electing")
	})
	if !errors.Is(err, kind.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("after %v: %v (ctx: %v), want unavailable before the deadline", time.Since(start), err, ctx.Err())
	}
}

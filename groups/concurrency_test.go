package groups

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many members on the real clock join, sync, heartbeat, commit, re-join,
// leave and abandon calls at once, across a few groups, while Describe and
// List read. Run under -race; afterwards Close must leave no goroutine.
func TestConcurrentMembers(t *testing.T) {
	before := runtime.NumGoroutine()
	c := New(Config{
		MinSessionTimeout: 10 * time.Millisecond,
		Partitions:        func(string) int32 { return 12 },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var synced atomic.Int64
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := runMember(ctx, c, fmt.Sprintf("g%d", i%3), rand.New(rand.NewSource(int64(i))), &synced); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, _ = c.List()
			_, _ = c.Describe("g0")
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if synced.Load() == 0 {
		t.Error("no member ever got an assignment")
	}
	c.Close()
	waitGoroutines(t, before)
}

// runMember plays one member until ctx ends. Only answers the protocol
// allows are accepted.
func runMember(ctx context.Context, c *Coordinator, group string, r *rand.Rand, synced *atomic.Int64) error {
	id, gen := "", int32(-1)
	for ctx.Err() == nil {
		req := logdJoin(group, id, nil, gen, "t")
		req.SessionTimeout, req.RebalanceTimeout = 50*time.Millisecond, 100*time.Millisecond
		callCtx, cancel := context.WithTimeout(ctx, time.Duration(r.Intn(150))*time.Millisecond)
		res, err := c.JoinGroup(callCtx, req)
		if err == nil {
			id, gen = res.MemberID, res.Generation
			_, err = c.SyncGroup(callCtx, SyncRequest{Group: group, MemberID: id, Generation: gen})
		}
		if err == nil {
			synced.Add(1)
		}
		cancel()
		for err == nil && ctx.Err() == nil {
			time.Sleep(time.Duration(r.Intn(20)) * time.Millisecond)
			if err = c.Heartbeat(group, id, gen); err == nil {
				err = c.ValidateCommit(group, id, gen)
			}
			if err == nil && r.Intn(30) == 0 {
				_ = c.LeaveGroup(group, id)
				id, gen = "", -1
				break
			}
		}
		switch {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, ErrUnknownMember):
			id, gen = "", -1
		case errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrIllegalGeneration),
			errors.Is(err, context.DeadlineExceeded):
		default:
			return fmt.Errorf("member %s of %s: %w", id, group, err)
		}
	}
	return nil
}

// waitGoroutines fails if the goroutine count does not fall back to what it
// was (timer callbacks already started may take a moment to return).
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close wakes calls blocked on the real clock too, and nothing is left
// running.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	c := New(Config{MinSessionTimeout: time.Millisecond})
	_, err := c.JoinGroup(context.Background(), kafkaJoin("g", "", "range"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := c.JoinGroup(context.Background(), kafkaJoin("g", "", "range"))
		done <- err
	}()
	go func() {
		_, err := c.JoinGroup(context.Background(), kafkaJoin("g", "", "range"))
		done <- err
	}()
	// Both wait for the first member, which never re-joins.
	time.Sleep(20 * time.Millisecond)
	c.Close()
	for i := 0; i < 2; i++ {
		if err := <-done; !errors.Is(err, ErrCoordinatorClosed) {
			t.Fatalf("a join blocked at Close: %v", err)
		}
	}
	waitGoroutines(t, before)
}

package groups

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The torture soak's double owner: a new coordinator (the metadata leader
// changed) must not hand out a generation an old one did, even to Kafka
// clients, which claim none, and even while the old one, deposed but not
// yet told, still runs.
func TestNewCoordinatorContinuesAboveRecordedGenerations(t *testing.T) {
	store := &MemoryGenerations{}
	old := newHarnessWith(t, func(c *Config) { c.Generations = store })
	a := old.join(kafkaJoin("g", "", "range"))
	for i := 0; i < 3; i++ {
		old.c.RequestRebalance("g")
		a = old.join(kafkaJoin("g", a.MemberID, "range"))
	}
	if a.Generation != 4 {
		t.Fatalf("old coordinator's generation %d, want 4", a.Generation)
	}

	h := newHarnessWith(t, func(c *Config) { c.Generations = store })
	b := h.join(kafkaJoin("g", "", "range"))
	if b.Generation <= a.Generation {
		t.Fatalf("new coordinator handed out generation %d; the old one had handed out %d", b.Generation, a.Generation)
	}
	// The deposed coordinator's next rebalance cannot collide either.
	old.c.RequestRebalance("g")
	a2 := old.join(kafkaJoin("g", a.MemberID, "range"))
	if a2.Generation <= b.Generation {
		t.Fatalf("old coordinator handed out generation %d after the new one's %d", a2.Generation, b.Generation)
	}
}

// A group used again after DeleteGroup continues above its old generations
// (docs/groups.md: the floor survives deletion).
func TestDeletedGroupContinuesItsGenerations(t *testing.T) {
	h := newHarness(t)
	a := h.join(kafkaJoin("g", "", "range"))
	if err := h.c.LeaveGroup("g", a.MemberID); err != nil {
		t.Fatal(err)
	}
	if err := h.c.DeleteGroup("g"); err != nil {
		t.Fatal(err)
	}
	if b := h.join(kafkaJoin("g", "", "range")); b.Generation <= a.Generation {
		t.Fatalf("generation %d after delete, had %d", b.Generation, a.Generation)
	}
}

// gateStore is a GenerationStore that blocks each Next until the test
// answers it.
type gateStore struct {
	mem   MemoryGenerations
	calls chan gateCall
}

type gateCall struct {
	after  int32
	answer chan error
}

func newGateStore() *gateStore { return &gateStore{calls: make(chan gateCall)} }

func (s *gateStore) Next(ctx context.Context, group string, after int32) (int32, error) {
	c := gateCall{after: after, answer: make(chan error, 1)}
	select {
	case s.calls <- c:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case err := <-c.answer:
		if err != nil {
			return 0, err
		}
		return s.mem.Next(ctx, group, after)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (s *gateStore) next(t *testing.T) gateCall {
	t.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the coordinator did not ask the store")
		return gateCall{}
	}
}

// No member learns a generation before the store recorded it; a failed
// record is tried again a second later, and the members still wait.
func TestJoinWaitsForTheRecordedGeneration(t *testing.T) {
	store := newGateStore()
	h := newHarnessWith(t, func(c *Config) { c.Generations = store })
	p := h.joinAsync(kafkaJoin("g", "", "range"))
	call := store.next(t)
	h.waitJoined("g", 1)
	h.wantState("g", PreparingRebalance)
	call.answer <- errors.New("not the leader any more")
	h.waitFor("the failure handled", func() bool { return !h.c.groups["g"].reserving })
	select {
	case out := <-p:
		t.Fatalf("JoinGroup answered before a generation was recorded: %+v", out)
	default:
	}
	h.clock.Advance(reserveRetry)
	call = store.next(t)
	if call.after != 0 {
		t.Fatalf("asked for a generation after %d, want 0", call.after)
	}
	call.answer <- nil
	if res := p.ok(t); res.Generation != 1 {
		t.Fatalf("generation %d, want 1", res.Generation)
	}
	h.wantState("g", CompletingRebalance)
}

// Close ends a store call under way (its context) and waits for it; the
// blocked join learns the coordinator closed.
func TestCloseEndsARecordUnderWay(t *testing.T) {
	store := newGateStore()
	h := newHarnessWith(t, func(c *Config) { c.Generations = store })
	p := h.joinAsync(kafkaJoin("g", "", "range"))
	store.next(t) // never answered
	h.waitJoined("g", 1)
	done := make(chan struct{})
	go func() { h.c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := p.wait(t); !errors.Is(err, ErrCoordinatorClosed) {
		t.Fatalf("JoinGroup after Close: %v", err)
	}
}

func TestNextGenerationBounds(t *testing.T) {
	if n, err := NextGeneration("g", -1); err != nil || n != 1 {
		t.Fatalf("NextGeneration(-1) = %d, %v", n, err)
	}
	if _, err := NextGeneration("g", 1<<31-1); err == nil {
		t.Fatal("NextGeneration past the int32 limit did not fail")
	}
}

// flakyStore answers at once, from another goroutine's point of view (it
// is not inline), failing the next fail calls.
type flakyStore struct {
	mem   MemoryGenerations
	mu    sync.Mutex
	fail  int
	calls int
}

func (s *flakyStore) Next(ctx context.Context, group string, after int32) (int32, error) {
	s.mu.Lock()
	s.calls++
	fail := s.fail > 0
	if fail {
		s.fail--
	}
	s.mu.Unlock()
	if fail {
		return 0, errors.New("injected")
	}
	return s.mem.Next(ctx, group, after)
}

// A record that fails while the join phase is still under way does not
// stall the rebalance: the end of the phase asks again.
func TestRecordFailureDuringJoinPhase(t *testing.T) {
	store := &flakyStore{}
	h := newHarnessWith(t, func(c *Config) { c.Generations = store })
	ms := stableGroup(h, "g", 2)
	store.mu.Lock()
	store.fail, store.calls = 1, 0
	store.mu.Unlock()
	if err := h.c.RequestRebalance("g"); err != nil {
		t.Fatal(err)
	}
	// The rebalance's own request fails; wait for its answer.
	h.waitFor("the failed record", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.calls == 1 && !h.c.groups["g"].reserving
	})
	a := h.joinAsync(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders"))
	b := h.joinAsync(logdJoin("g", ms[1].MemberID, nil, ms[1].Generation, "orders"))
	for _, p := range []pendingJoin{a, b} {
		if res := p.ok(t); res.Generation <= ms[0].Generation {
			t.Fatalf("generation %d after the rebalance, was %d", res.Generation, ms[0].Generation)
		}
	}
}

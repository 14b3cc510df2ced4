package groups

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

// takeover makes the next coordinator of old's groups, as the core does
// when the metadata leader changes: the same stores, every recorded group
// restored with the generation recorded for it.
func takeover(t *testing.T, old *harness, gens *MemoryGenerations, states *MemoryStates) *harness {
	t.Helper()
	old.c.Close()
	h := &harness{t: t, clock: old.clock, parts: old.parts}
	h.c = New(Config{Clock: h.clock, MinSessionTimeout: time.Second, Generations: gens, States: states,
		Partitions: func(topic string) int32 { return h.parts[topic] }})
	t.Cleanup(func() { _ = h.c.Close() })
	for _, st := range states.Load() {
		gens.mu.Lock()
		recorded := gens.floors[st.Group]
		gens.mu.Unlock()
		if err := h.c.Restore(st, recorded); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// kafkaGroup forms a generation of two Kafka-style members (the leader
// assigns client-side) and returns their join results and assignments.
func kafkaGroup(h *harness) ([]JoinResult, map[string][]byte) {
	h.t.Helper()
	a := h.join(kafkaJoin("g", "", "range"))
	pb := h.joinAsync(kafkaJoin("g", "", "range"))
	h.waitFor("b's join", func() bool { return len(h.c.groups["g"].members) == 2 })
	pa := h.joinAsync(kafkaJoin("g", a.MemberID, "range"))
	ms := []JoinResult{pa.ok(h.t), pb.ok(h.t)}
	if ms[0].Leader != ms[0].MemberID {
		ms[0], ms[1] = ms[1], ms[0]
	}
	asg := map[string][]byte{
		ms[0].MemberID: EncodeAssignment([]TopicPartition{{"orders", 0}, {"orders", 1}, {"orders", 2}}),
		ms[1].MemberID: EncodeAssignment([]TopicPartition{{"orders", 3}, {"orders", 4}, {"orders", 5}}),
	}
	pf := h.syncAsync(SyncRequest{Group: "g", MemberID: ms[1].MemberID, Generation: ms[1].Generation})
	if _, err := h.syncAsync(SyncRequest{Group: "g", MemberID: ms[0].MemberID, Generation: ms[0].Generation, Assignments: asg}).wait(h.t); err != nil {
		h.t.Fatal(err)
	}
	if _, err := pf.wait(h.t); err != nil {
		h.t.Fatal(err)
	}
	return ms, asg
}

// A new coordinator that restores the recorded groups keeps their members,
// generation and assignments: heartbeats and commits in the generation go
// on, a member that stopped is removed at its session's end (counted from
// the takeover), and the next generation is above every one before.
func TestTakeoverKeepsMembersAndGeneration(t *testing.T) {
	gens, states := &MemoryGenerations{}, &MemoryStates{}
	old := newHarnessWith(t, func(c *Config) { c.Generations, c.States = gens, states })
	ms, asg := kafkaGroup(old)
	gen := ms[0].Generation
	old.clock.Advance(8 * time.Second) // the sessions (10 s) restart at the takeover

	h := takeover(t, old, gens, states)
	h.clock.Advance(5 * time.Second)
	for _, m := range ms {
		if err := h.c.Heartbeat("g", m.MemberID, gen); err != nil {
			t.Fatalf("heartbeat of %s after the takeover: %v", m.MemberID, err)
		}
		if err := h.c.ValidateCommit("g", m.MemberID, gen); err != nil {
			t.Fatalf("commit of %s after the takeover: %v", m.MemberID, err)
		}
	}
	d := h.describe("g")
	if d.State != Stable || d.Generation != gen || d.Leader != ms[0].MemberID || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("after the takeover: %+v", d)
	}
	for _, m := range d.Members {
		if !reflect.DeepEqual(m.Assignment, asg[m.MemberID]) || m.ClientID != "kgo" || m.SessionTimeout != 10*time.Second {
			t.Fatalf("member after the takeover: %+v", m)
		}
	}

	// Only the leader heartbeats on: the other is removed, and the leader
	// re-joins into a generation above the old coordinator's.
	h.clock.Advance(6 * time.Second)
	if err := h.c.Heartbeat("g", ms[0].MemberID, gen); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(5 * time.Second)
	if err := h.c.Heartbeat("g", ms[0].MemberID, gen); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat once the other member's session ended: %v", err)
	}
	res := h.join(kafkaJoin("g", ms[0].MemberID, "range"))
	if res.Generation <= gen {
		t.Fatalf("generation %d after the takeover, the old coordinator's was %d", res.Generation, gen)
	}
}

// A group recorded in a generation below the one its store recorded was
// rebalancing (or formed a generation no member learned the assignment
// of): the new coordinator restarts the rebalance at once.
func TestTakeoverDuringRebalance(t *testing.T) {
	gens, states := &MemoryGenerations{}, &MemoryStates{}
	old := newHarnessWith(t, func(c *Config) { c.Generations, c.States = gens, states })
	ms := stableGroup(old, "g", 2)
	if err := old.c.RequestRebalance("g"); err != nil { // reserves the next generation
		t.Fatal(err)
	}
	h := takeover(t, old, gens, states)
	if err := h.c.Heartbeat("g", ms[0].MemberID, ms[0].Generation); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after a takeover during a rebalance: %v", err)
	}
	h.waitFor("rejoin", func() bool { return h.c.groups["g"].state == PreparingRebalance })
	p := h.joinAsync(logdJoin("g", ms[1].MemberID, nil, ms[1].Generation, "orders"))
	res := h.join(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders"))
	if res.Generation <= ms[0].Generation+1 {
		t.Fatalf("generation %d; the old coordinator had %d and had reserved the next", res.Generation, ms[0].Generation)
	}
	p.ok(t)
}

// A group whose members all left has no record: a takeover knows no
// member of it.
func TestEmptyGroupRecordIsRemoved(t *testing.T) {
	gens, states := &MemoryGenerations{}, &MemoryStates{}
	h := newHarnessWith(t, func(c *Config) { c.Generations, c.States = gens, states })
	ms := stableGroup(h, "g", 1)
	if n := len(states.Load()); n != 1 {
		t.Fatalf("%d records", n)
	}
	if err := h.c.LeaveGroup("g", ms[0].MemberID); err != nil {
		t.Fatal(err)
	}
	if n := len(states.Load()); n != 0 {
		t.Fatalf("%d records after the last member left", n)
	}
}

// A group that empties without ever having been recorded (a first join
// abandoned) writes nothing.
func TestUnrecordedGroupWritesNoRemoval(t *testing.T) {
	states := &blockingStates{calls: make(chan GroupState, 4), errs: make(chan error)}
	h := newHarnessWith(t, func(c *Config) { c.States, c.InitialRebalanceDelay = states, time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.c.JoinGroup(ctx, kafkaJoin("g", "", "range"))
		done <- err
	}()
	h.waitJoined("g", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned join: %v", err)
	}
	h.wantState("g", Empty)
	h.c.Close() // waits for any Save started
	select {
	case st := <-states.calls:
		t.Fatalf("recorded %+v", st)
	default:
	}
}

// blockingStates is a StateStore whose Save waits for the test's answer.
type blockingStates struct {
	mu    sync.Mutex
	calls chan GroupState
	errs  chan error
	saved []GroupState
}

func (s *blockingStates) Save(ctx context.Context, st GroupState) error {
	s.calls <- st
	select {
	case err := <-s.errs:
		if err == nil {
			s.mu.Lock()
			s.saved = append(s.saved, st)
			s.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// With a store that blocks (a replicated write), no member learns its
// assignment before the generation is recorded: the leader's and the
// followers' syncs wait for the Save, commits are refused meanwhile, and
// a failed Save is tried again.
func TestSyncWaitsForTheRecord(t *testing.T) {
	states := &blockingStates{calls: make(chan GroupState, 4), errs: make(chan error)}
	h := newHarnessWith(t, func(c *Config) { c.States = states })
	a := h.join(kafkaJoin("g", "", "range"))
	asg := map[string][]byte{a.MemberID: []byte("mine")}
	pa := h.syncAsync(SyncRequest{Group: "g", MemberID: a.MemberID, Generation: a.Generation, Assignments: asg})
	st := <-states.calls
	if st.Generation != a.Generation || len(st.Members) != 1 || string(st.Members[0].Assignment) != "mine" {
		t.Fatalf("recorded %+v", st)
	}
	if err := h.c.ValidateCommit("g", a.MemberID, a.Generation); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("commit before the record: %v", err)
	}
	states.errs <- errors.New("no quorum")
	h.waitFor("the failed save's end", func() bool { return !h.c.groups["g"].saving })
	h.clock.Advance(reserveRetry)
	<-states.calls // tried again
	select {
	case out := <-pa:
		t.Fatalf("sync answered before the record: %+v", out)
	default:
	}
	states.errs <- nil
	res, err := pa.wait(t)
	if err != nil || string(res.Assignment) != "mine" {
		t.Fatalf("sync after the record: %q, %v", res.Assignment, err)
	}
	h.wantState("g", Stable)
	if err := h.c.ValidateCommit("g", a.MemberID, a.Generation); err != nil {
		t.Fatal(err)
	}
}

// A group state survives its encoding, and bytes that are not one are
// refused with an error rather than decoded into a group.
func TestGroupStateEncoding(t *testing.T) {
	st := GroupState{Group: "g", Generation: 42, ProtocolType: "consumer", Protocol: "range", Leader: "a",
		Counts: map[string]int32{"orders": 6, "refunds": 2},
		Members: []MemberState{
			{MemberID: "a", ClientID: "kgo", ClientHost: "10.0.0.1", SessionTimeout: 10 * time.Second,
				RebalanceTimeout: time.Minute, Protocols: []string{"range", "cooperative-sticky"}, Metadata: []byte("m"), Assignment: []byte("x")},
			{MemberID: "b", ServerAssign: true, SessionTimeout: 6 * time.Second, Protocols: []string{"range"}},
		}}
	b := EncodeGroupState(st)
	got, err := DecodeGroupState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("decoded %+v, encoded %+v", got, st)
	}
	for _, bad := range [][]byte{nil, {2}, b[:len(b)-1], append(append([]byte{}, b...), 0), {1, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := DecodeGroupState(bad); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}

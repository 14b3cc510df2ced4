package groups

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// twoKafkaMembers brings a client-assigned group to CompletingRebalance with
// two members, returning the leader's and the follower's join results.
func twoKafkaMembers(h *harness) (leader, follower JoinResult) {
	h.t.Helper()
	first := h.join(kafkaJoin("g", "", "range"))
	second := h.joinAsync(kafkaJoin("g", "", "range"))
	h.waitJoined("g", 1)
	leader = h.join(kafkaJoin("g", first.MemberID, "range"))
	follower = second.ok(h.t)
	h.wantState("g", CompletingRebalance)
	return leader, follower
}

// A leader that never sends SyncGroup is removed when the rebalance timeout
// passes; the waiting follower is told to re-join and becomes the leader.
func TestLeaderNeverSyncs(t *testing.T) {
	h := newHarness(t)
	leader, follower := twoKafkaMembers(h)
	wantErr(t, h.c.ValidateCommit("g", follower.MemberID, follower.Generation), ErrRebalanceInProgress)
	fs := h.syncAsync(SyncRequest{Group: "g", MemberID: follower.MemberID, Generation: follower.Generation})
	h.waitSyncing("g", follower.MemberID)
	// The leader keeps heartbeating: only the sync window removes it.
	for i := 0; i < 6; i++ {
		h.clock.Advance(3 * time.Second)
		h.c.Heartbeat("g", leader.MemberID, leader.Generation)
	}
	h.wantState("g", CompletingRebalance)
	h.clock.Advance(2 * time.Second) // the rebalance timeout, 20 s, has passed
	if _, err := fs.wait(t); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("the follower's sync: %v", err)
	}
	wantErr(t, h.c.Heartbeat("g", leader.MemberID, leader.Generation), ErrUnknownMember)
	res := h.join(kafkaJoin("g", follower.MemberID, "range"))
	if res.Leader != follower.MemberID || res.Generation != follower.Generation+1 || len(res.Members) != 1 {
		t.Fatalf("after the leader was removed: %+v", res)
	}
}

// A member joining while the group waits for the leader's assignment starts
// a new rebalance; the blocked follower learns it and everyone re-joins.
func TestJoinDuringCompletingRebalance(t *testing.T) {
	h := newHarness(t)
	leader, follower := twoKafkaMembers(h)
	fs := h.syncAsync(SyncRequest{Group: "g", MemberID: follower.MemberID, Generation: follower.Generation})
	h.waitSyncing("g", follower.MemberID)
	third := h.joinAsync(kafkaJoin("g", "", "range"))
	if _, err := fs.wait(t); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("the follower's sync: %v", err)
	}
	h.wantState("g", PreparingRebalance)
	// The leader's late assignment is for a generation being replaced.
	_, err := h.syncAsync(SyncRequest{Group: "g", MemberID: leader.MemberID, Generation: leader.Generation}).wait(t)
	wantErr(t, err, ErrRebalanceInProgress)
	p1 := h.joinAsync(kafkaJoin("g", leader.MemberID, "range"))
	p2 := h.joinAsync(kafkaJoin("g", follower.MemberID, "range"))
	r1, r2, r3 := p1.ok(t), p2.ok(t), third.ok(t)
	if r1.Generation != leader.Generation+1 || r2.Generation != r1.Generation || r3.Generation != r1.Generation || len(r1.Members) != 3 {
		t.Fatalf("after the third joined: %+v %+v %+v", r1, r2, r3)
	}
}

// A member that does not re-join within the rebalance timeout is removed.
func TestRebalanceTimeoutRemovesAbsentMember(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 2)
	p := h.joinAsync(logdJoin("g", ms[0].MemberID, []TopicPartition{tp("orders", 9)}, ms[0].Generation, "orders"))
	h.waitJoined("g", 1)
	for i := 0; i < 7; i++ { // the absent member heartbeats but never re-joins
		h.clock.Advance(3 * time.Second)
		h.c.Heartbeat("g", ms[1].MemberID, ms[1].Generation)
	}
	res := p.ok(t)
	if res.Generation != ms[0].Generation+1 || len(h.describe("g").Members) != 1 {
		t.Fatalf("after the rebalance timeout: %+v, %+v", res, h.describe("g"))
	}
	wantErr(t, h.c.Heartbeat("g", ms[1].MemberID, ms[1].Generation), ErrUnknownMember)
}

// Kafka's incremental cooperative protocol: a member joining a group whose
// only member owns every partition. Generation g+1 keeps the owner's share
// and gives the newcomer nothing; after the owner revokes and re-joins,
// generation g+2 gives the newcomer the moved partitions. No partition the
// owner keeps ever leaves its assignment.
func TestCooperativeTwoPhase(t *testing.T) {
	h := newHarness(t)
	a := h.join(logdJoin("g", "", nil, -1, "orders"))
	owned := h.syncPartitions("g", a)
	if len(owned) != 6 {
		t.Fatalf("the only member got %v", owned)
	}
	pb := h.joinAsync(logdJoin("g", "", nil, -1, "orders"))
	h.waitJoined("g", 1)
	wantErr(t, h.c.Heartbeat("g", a.MemberID, a.Generation), ErrRebalanceInProgress)
	a2 := h.join(logdJoin("g", a.MemberID, owned, a.Generation, "orders"))
	b2 := pb.ok(t)
	kept, bGot := h.syncPartitions("g", a2), h.syncPartitions("g", b2)
	if len(kept) != 3 || len(bGot) != 0 {
		t.Fatalf("phase one: the owner kept %v, the newcomer got %v", kept, bGot)
	}
	// The owner revokes the three it lost and re-joins with what it kept.
	pb = h.joinAsync(logdJoin("g", b2.MemberID, nil, b2.Generation, "orders"))
	a3 := h.join(logdJoin("g", a.MemberID, kept, a2.Generation, "orders"))
	b3 := pb.ok(t)
	a3Got, b3Got := h.syncPartitions("g", a3), h.syncPartitions("g", b3)
	if !reflect.DeepEqual(a3Got, kept) || len(b3Got) != 3 {
		t.Fatalf("phase two: the owner has %v (kept %v), the newcomer %v", a3Got, kept, b3Got)
	}
	for _, p := range b3Got {
		if containsTP(kept, p) {
			t.Fatalf("%v given to both", p)
		}
	}
}

// A first JoinGroup abandoned by its caller leaves no ghost member behind.
func TestAbandonedFirstJoinIsRemoved(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.c.JoinGroup(ctx, logdJoin("g", "", nil, -1, "orders"))
		done <- err
	}()
	h.waitJoined("g", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned join: %v", err)
	}
	if n := len(h.describe("g").Members); n != 1 {
		t.Fatalf("%d members after the abandoned join, want 1", n)
	}
	// The remaining member completes the phase alone.
	res := h.join(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders"))
	if len(h.syncPartitions("g", res)) != 6 {
		t.Fatal("the remaining member should get everything")
	}
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t)
	_, err := h.c.JoinGroup(context.Background(), JoinRequest{Group: "g", ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}, SessionTimeout: time.Hour})
	wantErr(t, err, ErrInvalidSessionTimeout)
	_, err = h.c.JoinGroup(context.Background(), JoinRequest{Group: "", ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}})
	wantErr(t, err, ErrInvalidGroup)
	_, err = h.c.JoinGroup(context.Background(), JoinRequest{Group: strings.Repeat("g", MaxGroupBytes+1), ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}})
	wantErr(t, err, ErrInvalidGroup)
	_, err = h.c.JoinGroup(context.Background(), JoinRequest{Group: "g", ProtocolType: "consumer"})
	wantErr(t, err, ErrInconsistentProtocol)
	req := logdJoin("g", "", nil, -1, "orders")
	req.Protocols[0].Name = "sticky"
	_, err = h.c.JoinGroup(context.Background(), req)
	wantErr(t, err, ErrUnknownAssignor)
	_, err = h.c.JoinGroup(context.Background(), kafkaJoin("g", "nobody", "range"))
	wantErr(t, err, ErrUnknownMember)

	h.join(kafkaJoin("g", "", "range", "roundrobin"))
	_, err = h.c.JoinGroup(context.Background(), kafkaJoin("g", "", "sticky"))
	wantErr(t, err, ErrInconsistentProtocol)
	other := kafkaJoin("g", "", "range")
	other.ProtocolType = "connect"
	_, err = h.c.JoinGroup(context.Background(), other)
	wantErr(t, err, ErrInconsistentProtocol)
}

// The protocol most members prefer among those all support wins.
func TestProtocolChoice(t *testing.T) {
	h := newHarness(t)
	first := h.join(kafkaJoin("g", "", "range", "roundrobin"))
	p2 := h.joinAsync(kafkaJoin("g", "", "roundrobin", "range"))
	p3 := h.joinAsync(kafkaJoin("g", "", "roundrobin", "sticky", "range"))
	h.waitJoined("g", 2)
	res := h.join(kafkaJoin("g", first.MemberID, "range", "roundrobin"))
	p2.ok(t)
	p3.ok(t)
	if res.Protocol != "roundrobin" || string(res.Members[2].Metadata) != "meta-roundrobin" {
		t.Fatalf("chose %q, members %+v", res.Protocol, res.Members)
	}
}

// A follower repeating its join in a settled generation gets it back
// without a rebalance.
func TestRepeatedJoinKeepsGeneration(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 2)
	res := h.join(logdJoin("g", ms[1].MemberID, nil, -1, "orders"))
	if res.Generation != ms[1].Generation {
		t.Fatalf("generation %d, want %d", res.Generation, ms[1].Generation)
	}
	h.wantState("g", Stable)
}

func TestCloseUnblocksAndStopsTimers(t *testing.T) {
	h := newHarness(t)
	leader, follower := twoKafkaMembers(h)
	fs := h.syncAsync(SyncRequest{Group: "g", MemberID: follower.MemberID, Generation: follower.Generation})
	h.waitSyncing("g", follower.MemberID)
	pj := h.joinAsync(kafkaJoin("g2", "", "range"))
	h.waitFor("g2", func() bool { return h.c.groups["g2"] != nil })
	h.c.Close()
	if _, err := fs.wait(t); !errors.Is(err, ErrCoordinatorClosed) {
		t.Fatalf("blocked sync after Close: %v", err)
	}
	if _, err := pj.wait(t); err != nil && !errors.Is(err, ErrCoordinatorClosed) {
		t.Fatalf("join after Close: %v", err)
	}
	if n := h.clock.Pending(); n != 0 {
		t.Fatalf("%d timers still pending after Close", n)
	}
	wantErr(t, h.c.Heartbeat("g", leader.MemberID, leader.Generation), ErrCoordinatorClosed)
	wantErr(t, h.c.ValidateCommit("g", "", -1), ErrCoordinatorClosed)
	_, err := h.c.List()
	wantErr(t, err, ErrCoordinatorClosed)
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestListDescribeDelete(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "b", 1)
	h.join(kafkaJoin("a", "", "range"))
	got, err := h.c.List()
	want := []GroupListing{{"a", "consumer", CompletingRebalance}, {"b", "consumer", Stable}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("List: %v, %v", got, err)
	}
	d, err := h.c.Describe("nope")
	if !errors.Is(err, ErrGroupNotFound) || d.State != Dead {
		t.Fatalf("describe unknown: %+v, %v", d, err)
	}
	wantErr(t, h.c.DeleteGroup("b"), ErrGroupNotEmpty)
	wantErr(t, h.c.DeleteGroup("nope"), ErrGroupNotFound)
	h.c.LeaveGroup("b", ms[0].MemberID)
	if err := h.c.DeleteGroup("b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.c.List(); len(got) != 1 {
		t.Fatalf("after delete: %v", got)
	}
}

// RequestRebalance (a topic gained partitions) reaches members through
// Heartbeat, and the new partitions are assigned.
func TestRequestRebalance(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 1)
	h.parts["orders"] = 8
	if err := h.c.RequestRebalance("g"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, h.c.Heartbeat("g", ms[0].MemberID, ms[0].Generation), ErrRebalanceInProgress)
	res := h.join(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders"))
	if n := len(h.syncPartitions("g", res)); n != 8 {
		t.Fatalf("%d partitions after the topic grew, want 8", n)
	}
}

// CheckPartitions notices a topic that gained partitions, then one that
// was deleted, and rebalances; with no change it does nothing.
func TestCheckPartitionsRebalancesOnTopicChange(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 2)
	if got, err := h.c.CheckPartitions(); err != nil || len(got) != 0 {
		t.Fatalf("no topic changed: rebalanced %v (%v)", got, err)
	}
	rejoin := func(ms []JoinResult) (total int, out []JoinResult) {
		wantErr(t, h.c.Heartbeat("g", ms[0].MemberID, ms[0].Generation), ErrRebalanceInProgress)
		second := h.joinAsync(logdJoin("g", ms[1].MemberID, nil, ms[1].Generation, "orders"))
		h.waitJoined("g", 1)
		out = []JoinResult{h.join(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders")), second.ok(t)}
		for _, r := range out {
			total += len(h.syncPartitions("g", r))
		}
		return total, out
	}
	h.parts["orders"] = 8
	if got, _ := h.c.CheckPartitions(); len(got) != 1 || got[0] != "g" {
		t.Fatalf("the topic grew to 8 partitions: rebalanced %v, want [g]", got)
	}
	total, ms := rejoin(ms)
	if total != 8 {
		t.Fatalf("%d partitions assigned after the topic grew, want 8", total)
	}
	h.wantState("g", Stable)
	delete(h.parts, "orders")
	if got, _ := h.c.CheckPartitions(); len(got) != 1 {
		t.Fatalf("the topic was deleted: rebalanced %v, want [g]", got)
	}
	if total, _ = rejoin(ms); total != 0 {
		t.Fatalf("%d partitions of a deleted topic still assigned", total)
	}
	if got, _ := h.c.CheckPartitions(); len(got) != 0 {
		t.Fatalf("nothing changed since: rebalanced %v", got)
	}
}

// CheckPartitions rebalances the groups subscribed to a topic that gained
// partitions, and only those: server-assigned ones and, from their
// subscriptions, groups whose leader client assigns.
func TestCheckPartitionsOnlySubscribers(t *testing.T) {
	h := newHarness(t)
	h.parts["audit"] = 2
	ms := stableGroup(h, "g", 1)
	other := h.join(logdJoin("other", "", nil, -1, "audit"))
	h.syncPartitions("other", other)
	kreq := kafkaJoin("k", "", "range")
	kreq.Protocols[0].Metadata = EncodeSubscription(Subscription{Topics: []string{"orders"}, Generation: -1})
	k := h.join(kreq)
	if _, err := h.c.SyncGroup(context.Background(), SyncRequest{Group: "k", MemberID: k.MemberID, Generation: k.Generation}); err != nil {
		t.Fatal(err)
	}
	h.parts["orders"] = 8
	got, err := h.c.CheckPartitions()
	if err != nil || !reflect.DeepEqual(got, []string{"g", "k"}) {
		t.Fatalf("CheckPartitions after orders grew = %v, %v; want [g k]", got, err)
	}
	if err := h.c.Heartbeat("other", other.MemberID, other.Generation); err != nil {
		t.Fatalf("a group not subscribed to orders was disturbed: %v", err)
	}
	wantErr(t, h.c.Heartbeat("k", k.MemberID, k.Generation), ErrRebalanceInProgress)
	wantErr(t, h.c.Heartbeat("g", ms[0].MemberID, ms[0].Generation), ErrRebalanceInProgress)
	res := h.join(logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders"))
	if n := len(h.syncPartitions("g", res)); n != 8 {
		t.Fatalf("%d partitions after the topic grew, want 8", n)
	}
	h.c.Close()
	if _, err := h.c.CheckPartitions(); !errors.Is(err, ErrCoordinatorClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// With an initial rebalance delay, members that arrive one after another
// into an Empty group share the first generation; the delay stops at the
// rebalance timeout.
func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	var pending []pendingJoin
	for i := 0; i < 3; i++ {
		pending = append(pending, h.joinAsync(logdJoin("g", "", nil, -1, "orders")))
		h.waitJoined("g", i+1)
		h.clock.Advance(time.Second)
	}
	h.clock.Advance(2*time.Second - time.Nanosecond) // 3 s after the last join, less a tick
	h.wantState("g", PreparingRebalance)
	h.clock.Advance(time.Nanosecond)
	for _, p := range pending {
		res := p.ok(t)
		if res.Generation != 1 {
			t.Fatalf("generation %d, want 1", res.Generation)
		}
		if n := len(h.syncPartitions("g", res)); n != 2 {
			t.Fatalf("%d partitions, want 2", n)
		}
	}
	if d := h.describe("g"); d.Rebalances != 1 {
		t.Fatalf("%d rebalances, want 1", d.Rebalances)
	}

	// Members arriving every 2 s keep extending the delay, but the phase
	// ends at the first member's rebalance timeout (20 s).
	pending = []pendingJoin{h.joinAsync(logdJoin("h", "", nil, -1, "orders"))}
	h.waitJoined("h", 1)
	for i := 1; i < 10; i++ {
		h.clock.Advance(2 * time.Second)
		pending = append(pending, h.joinAsync(logdJoin("h", "", nil, -1, "orders")))
		h.waitJoined("h", i+1)
	}
	h.clock.Advance(2 * time.Second)
	for _, p := range pending {
		if res := p.ok(t); res.Generation != 1 {
			t.Fatalf("generation %d, want 1", res.Generation)
		}
	}
}

// After a coordinator failover members re-join a coordinator that never saw
// the group: generations continue above the recorded ones (the two
// coordinators share the store, as a cluster's share its metadata), and
// their owned partitions stay with them, without revocation.
func TestFailoverKeepsGenerationsAndPartitions(t *testing.T) {
	store := &MemoryGenerations{}
	old := newHarnessWith(t, func(c *Config) { c.Generations = store })
	ms := stableGroup(old, "g", 3)
	owned := make(map[string][]TopicPartition)
	for _, m := range old.describe("g").Members {
		owned[m.MemberID] = m.Partitions
	}
	for i := 0; i < 40; i++ { // move the old generation well past 1
		old.c.RequestRebalance("g")
		var pending []pendingJoin
		for _, m := range ms {
			pending = append(pending, old.joinAsync(logdJoin("g", m.MemberID, owned[m.MemberID], m.Generation, "orders")))
		}
		for j, p := range pending {
			ms[j] = p.ok(t)
		}
	}
	oldGen := ms[0].Generation
	old.c.Close()

	h := newHarnessWith(t, func(c *Config) { c.InitialRebalanceDelay = time.Second; c.Generations = store })
	var pending []pendingJoin
	for _, m := range ms {
		pending = append(pending, h.joinAsync(logdJoin("g", "", owned[m.MemberID], m.Generation, "orders")))
	}
	h.waitJoined("g", 3)
	h.clock.Advance(time.Second)
	for i, p := range pending {
		res := p.ok(t)
		if res.Generation != oldGen+1 {
			t.Fatalf("generation %d after failover, want %d", res.Generation, oldGen+1)
		}
		if got := h.syncPartitions("g", res); !reflect.DeepEqual(got, owned[ms[i].MemberID]) {
			t.Fatalf("member %d got %v after failover, owned %v", i, got, owned[ms[i].MemberID])
		}
	}
	if d := h.describe("g"); d.Rebalances != 1 {
		t.Fatalf("%d rebalances after failover, want 1", d.Rebalances)
	}
}

// A member's claimed generation does not move the group's: the recorded
// generations already continue above every genuine claim, and a claim
// near the int32 limit must not use up the group's numbers.
func TestClaimedGenerationIsNotTheGroups(t *testing.T) {
	h := newHarness(t)
	res := h.join(logdJoin("g", "", nil, math.MaxInt32-5, "orders"))
	if res.Generation != 1 {
		t.Fatalf("generation %d", res.Generation)
	}
}

// A re-join with a shorter session timeout takes effect at once.
func TestRejoinShortensSession(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 1)
	req := logdJoin("g", ms[0].MemberID, nil, ms[0].Generation, "orders")
	req.SessionTimeout = 2 * time.Second
	res := h.join(req)
	h.syncPartitions("g", res)
	h.clock.Advance(2*time.Second - time.Nanosecond)
	h.wantState("g", Stable)
	h.clock.Advance(time.Nanosecond)
	h.wantState("g", Empty)
}

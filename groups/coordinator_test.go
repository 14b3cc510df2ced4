package groups

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestJoinSyncOneMember(t *testing.T) {
	h := newHarness(t)
	res := h.join(kafkaJoin("g", "", "range"))
	if res.Generation != 1 || res.Leader != res.MemberID || res.Protocol != "range" || !strings.HasPrefix(res.MemberID, "kgo-") {
		t.Fatalf("join result %+v", res)
	}
	if len(res.Members) != 1 || !bytes.Equal(res.Members[0].Metadata, []byte("meta-range")) {
		t.Fatalf("the leader should get every member's metadata: %+v", res.Members)
	}
	h.wantState("g", CompletingRebalance)
	out, err := h.syncAsync(SyncRequest{Group: "g", MemberID: res.MemberID, Generation: 1,
		Assignments: map[string][]byte{res.MemberID: []byte("all of it")}}).wait(t)
	if err != nil || string(out.Assignment) != "all of it" || out.Protocol != "range" {
		t.Fatalf("sync: %+v, %v", out, err)
	}
	h.wantState("g", Stable)
	if err := h.c.Heartbeat("g", res.MemberID, 1); err != nil {
		t.Fatal(err)
	}
}

// A Kafka client leader computes the assignment; a follower's SyncGroup
// waits for it and gets its own share.
func TestClientSideAssignment(t *testing.T) {
	h := newHarness(t)
	first := h.join(kafkaJoin("g", "", "range"))
	h.syncAsync(SyncRequest{Group: "g", MemberID: first.MemberID, Generation: 1})
	second := h.joinAsync(kafkaJoin("g", "", "range"))
	h.waitJoined("g", 1)
	if err := h.c.Heartbeat("g", first.MemberID, 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat during the join phase: %v", err)
	}
	p1 := h.joinAsync(kafkaJoin("g", first.MemberID, "range"))
	leader, follower := p1.ok(t), second.ok(t)
	if leader.Generation != 2 || leader.Leader != first.MemberID || len(leader.Members) != 2 || len(follower.Members) != 0 {
		t.Fatalf("leader %+v, follower %+v", leader, follower)
	}
	fs := h.syncAsync(SyncRequest{Group: "g", MemberID: follower.MemberID, Generation: 2})
	h.waitSyncing("g", follower.MemberID)
	h.syncAsync(SyncRequest{Group: "g", MemberID: leader.MemberID, Generation: 2, Assignments: map[string][]byte{
		leader.MemberID: []byte("L"), follower.MemberID: []byte("F"),
	}})
	if out, err := fs.wait(t); err != nil || string(out.Assignment) != "F" {
		t.Fatalf("follower sync: %+v, %v", out, err)
	}
	d := h.describe("g")
	if d.State != Stable || d.Generation != 2 || len(d.Members) != 2 || string(d.Members[0].Assignment) != "L" || d.Members[1].ClientHost != "10.0.0.2" {
		t.Fatalf("describe %+v", d)
	}
}

// Three logd members on six partitions get two each from the server.
func TestServerSideAssignment(t *testing.T) {
	h := newHarness(t)
	stableGroup(h, "g", 3)
	d := h.describe("g")
	seen := make(map[TopicPartition]string)
	for _, m := range d.Members {
		if len(m.Partitions) != 2 {
			t.Fatalf("%s got %v, want 2 partitions", m.MemberID, m.Partitions)
		}
		for _, tp := range m.Partitions {
			if o, dup := seen[tp]; dup {
				t.Fatalf("%v given to %s and %s", tp, o, m.MemberID)
			}
			seen[tp] = m.MemberID
		}
	}
	if len(seen) != 6 || d.Generation != 2 || d.Protocol != CooperativeStickyAssignorName {
		t.Fatalf("describe %+v", d)
	}
}

// stableGroup makes a Stable group of n server-assigned members that joined
// together, returning their join results in join order.
func stableGroup(h *harness, group string, n int) []JoinResult {
	h.t.Helper()
	first := h.join(logdJoin(group, "", nil, -1, "orders"))
	var pending []pendingJoin
	for i := 1; i < n; i++ {
		pending = append(pending, h.joinAsync(logdJoin(group, "", nil, -1, "orders")))
	}
	h.waitJoined(group, n-1)
	out := []JoinResult{h.join(logdJoin(group, first.MemberID, nil, -1, "orders"))}
	for _, p := range pending {
		out = append(out, p.ok(h.t))
	}
	for _, r := range out {
		h.syncPartitions(group, r)
	}
	h.wantState(group, Stable)
	return out
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 2)
	a, b := ms[0], ms[1]
	for i := 0; i < 3; i++ { // a heartbeats every 3 s, b never does
		h.clock.Advance(3 * time.Second)
		if err := h.c.Heartbeat("g", a.MemberID, a.Generation); err != nil {
			t.Fatalf("heartbeat at step %d: %v", i, err)
		}
	}
	h.wantState("g", Stable)
	h.clock.Advance(time.Second - time.Nanosecond)
	h.wantState("g", Stable)
	h.clock.Advance(time.Nanosecond) // b's session timeout, 10 s, has passed
	h.wantState("g", PreparingRebalance)
	wantErr(t, h.c.Heartbeat("g", b.MemberID, b.Generation), ErrUnknownMember)
	wantErr(t, h.c.Heartbeat("g", a.MemberID, a.Generation), ErrRebalanceInProgress)
	res := h.join(logdJoin("g", a.MemberID, nil, a.Generation, "orders"))
	if res.Generation != a.Generation+1 {
		t.Fatalf("generation %d after expiry, want %d", res.Generation, a.Generation+1)
	}
	if tps := h.syncPartitions("g", res); len(tps) != 6 {
		t.Fatalf("the survivor got %v", tps)
	}
}

func TestLeaveRebalancesAtOnce(t *testing.T) {
	h := newHarness(t)
	ms := stableGroup(h, "g", 2)
	if err := h.c.LeaveGroup("g", ms[1].MemberID); err != nil {
		t.Fatal(err)
	}
	h.wantState("g", PreparingRebalance)
	wantErr(t, h.c.LeaveGroup("g", ms[1].MemberID), ErrUnknownMember)
	if err := h.c.LeaveGroup("g", ms[0].MemberID); err != nil {
		t.Fatal(err)
	}
	d := h.describe("g")
	if d.State != Empty || d.Generation != ms[0].Generation+1 || len(d.Members) != 0 {
		t.Fatalf("after everyone left: %+v", d)
	}
}

func TestFencing(t *testing.T) {
	h := newHarness(t)
	if err := h.c.ValidateCommit("g", "", -1); err != nil {
		t.Fatalf("a standalone commit to an unknown group: %v", err)
	}
	ms := stableGroup(h, "g", 2)
	a := ms[0]
	if err := h.c.ValidateCommit("g", a.MemberID, a.Generation); err != nil {
		t.Fatalf("a current member's commit: %v", err)
	}
	wantErr(t, h.c.ValidateCommit("g", "", -1), ErrUnknownMember)
	wantErr(t, h.c.ValidateCommit("g", "zombie", a.Generation), ErrUnknownMember)
	wantErr(t, h.c.ValidateCommit("other", a.MemberID, a.Generation), ErrUnknownMember)

	err := h.c.ValidateCommit("g", a.MemberID, a.Generation-1)
	var ge *GenerationError
	if !errors.As(err, &ge) || !errors.Is(err, ErrIllegalGeneration) || ge.Current != a.Generation || ge.Given != a.Generation-1 {
		t.Fatalf("an older generation's commit: %v", err)
	}
	if !strings.Contains(err.Error(), "the group is at generation 2") {
		t.Fatalf("the message should name the current generation: %v", err)
	}
	// During the join phase the current generation may still commit (what
	// it revokes); once the phase completes it is the old one.
	h.c.LeaveGroup("g", ms[1].MemberID)
	if err := h.c.ValidateCommit("g", a.MemberID, a.Generation); err != nil {
		t.Fatalf("commit while preparing a rebalance: %v", err)
	}
	res := h.join(logdJoin("g", a.MemberID, nil, a.Generation, "orders"))
	wantErr(t, h.c.ValidateCommit("g", a.MemberID, a.Generation), ErrIllegalGeneration)
	wantErr(t, h.c.Heartbeat("g", a.MemberID, a.Generation), ErrIllegalGeneration)
	if err := h.c.ValidateCommit("g", a.MemberID, res.Generation); err != nil {
		t.Fatalf("commit in the new generation: %v", err)
	}
}

// A logd member and a Kafka client share one group: while the logd member
// leads, the coordinator assigns for both; once it leaves, the Kafka client
// leads, reads the subscriptions and assigns client-side.
func TestMixedGroup(t *testing.T) {
	h := newHarness(t)
	logd := h.join(logdJoin("g", "", nil, -1, "orders"))
	kreq := kafkaJoin("g", "", CooperativeStickyAssignorName)
	kreq.Protocols[0].Metadata = EncodeSubscription(Subscription{Topics: []string{"orders"}, Generation: -1})
	pk := h.joinAsync(kreq)
	h.waitJoined("g", 1)
	logd = h.join(logdJoin("g", logd.MemberID, nil, logd.Generation, "orders"))
	kafka := pk.ok(t)
	if kafka.Leader != logd.MemberID || len(kafka.Members) != 0 || len(logd.Members) != 0 {
		t.Fatalf("logd leads, nobody gets metadata: %+v / %+v", logd, kafka)
	}
	if n := len(h.syncPartitions("g", kafka)); n != 3 {
		t.Fatalf("the Kafka follower got %d partitions, want 3", n)
	}

	h.c.LeaveGroup("g", logd.MemberID)
	kreq.MemberID = kafka.MemberID
	kafka = h.join(kreq)
	if kafka.Leader != kafka.MemberID || len(kafka.Members) != 1 {
		t.Fatalf("the Kafka client should lead with every subscription: %+v", kafka)
	}
	sub, err := DecodeSubscription(kafka.Members[0].Metadata)
	if err != nil || sub.Topics[0] != "orders" {
		t.Fatalf("subscription %+v, %v", sub, err)
	}
	all := EncodeAssignment([]TopicPartition{tp("orders", 0), tp("orders", 1)})
	out, err := h.syncAsync(SyncRequest{Group: "g", MemberID: kafka.MemberID, Generation: kafka.Generation,
		Assignments: map[string][]byte{kafka.MemberID: all}}).wait(t)
	if err != nil || !bytes.Equal(out.Assignment, all) {
		t.Fatalf("client-side sync: %v", err)
	}
	if d := h.describe("g"); len(d.Members[0].Partitions) != 2 {
		t.Fatalf("describe decodes the client-side assignment: %+v", d.Members[0])
	}
}

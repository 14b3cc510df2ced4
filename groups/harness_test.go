package groups

import (
	"context"
	"errors"
	"testing"
	"time"
)

// harness drives a Coordinator on a FakeClock.
type harness struct {
	t     *testing.T
	clock *FakeClock
	c     *Coordinator
	parts map[string]int32
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, func(*Config) {}) }

func newHarnessWith(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: NewFakeClock(time.Unix(1_700_000_000, 0)), parts: map[string]int32{"orders": 6}}
	cfg := Config{
		Clock:             h.clock,
		MinSessionTimeout: time.Second,
		Partitions:        func(topic string) int32 { return h.parts[topic] },
	}
	configure(&cfg)
	h.c = New(cfg)
	t.Cleanup(func() { _ = h.c.Close() })
	return h
}

// logdJoin is a join as logd's own clients send it: consumer protocol,
// cooperative-sticky, server-side assignment.
func logdJoin(group, memberID string, owned []TopicPartition, gen int32, topics ...string) JoinRequest {
	meta := EncodeSubscription(Subscription{Topics: topics, Owned: owned, Generation: gen})
	return JoinRequest{
		Group: group, MemberID: memberID, ClientID: "logd", ClientHost: "10.0.0.1",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
		ProtocolType: ConsumerProtocolType, ServerAssign: true,
		Protocols: []Protocol{{Name: CooperativeStickyAssignorName, Metadata: meta}},
	}
}

// kafkaJoin is a join as a Kafka client sends it: the leader assigns.
func kafkaJoin(group, memberID string, protocols ...string) JoinRequest {
	req := JoinRequest{
		Group: group, MemberID: memberID, ClientID: "kgo", ClientHost: "10.0.0.2",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second, ProtocolType: ConsumerProtocolType,
	}
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	return req
}

type pendingJoin chan joinOutcome

func (h *harness) joinAsync(req JoinRequest) pendingJoin {
	ch := make(pendingJoin, 1)
	go func() {
		res, err := h.c.JoinGroup(context.Background(), req)
		ch <- joinOutcome{res, err}
	}()
	return ch
}

func (p pendingJoin) wait(t *testing.T) (JoinResult, error) {
	t.Helper()
	select {
	case out := <-p:
		return out.res, out.err
	case <-time.After(10 * time.Second):
		t.Fatal("JoinGroup did not return")
		return JoinResult{}, nil
	}
}

func (p pendingJoin) ok(t *testing.T) JoinResult {
	t.Helper()
	res, err := p.wait(t)
	if err != nil {
		t.Fatalf("JoinGroup: %v", err)
	}
	return res
}

func (h *harness) join(req JoinRequest) JoinResult {
	h.t.Helper()
	return h.joinAsync(req).ok(h.t)
}

type pendingSync chan syncOutcome

func (h *harness) syncAsync(req SyncRequest) pendingSync {
	ch := make(pendingSync, 1)
	go func() {
		res, err := h.c.SyncGroup(context.Background(), req)
		ch <- syncOutcome{res, err}
	}()
	return ch
}

func (p pendingSync) wait(t *testing.T) (SyncResult, error) {
	t.Helper()
	select {
	case out := <-p:
		return out.res, out.err
	case <-time.After(10 * time.Second):
		t.Fatal("SyncGroup did not return")
		return SyncResult{}, nil
	}
}

// syncPartitions syncs a server-assigned member and decodes its partitions.
func (h *harness) syncPartitions(group string, res JoinResult) []TopicPartition {
	h.t.Helper()
	out, err := h.syncAsync(SyncRequest{Group: group, MemberID: res.MemberID, Generation: res.Generation}).wait(h.t)
	if err != nil {
		h.t.Fatalf("SyncGroup %s: %v", res.MemberID, err)
	}
	tps, err := DecodeAssignment(out.Assignment)
	if err != nil {
		h.t.Fatal(err)
	}
	return tps
}

// waitFor polls cond under the coordinator's lock until it holds: the way
// a test knows a blocked call has reached the coordinator.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.c.mu.Lock()
		ok := cond()
		h.c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitJoined waits until n members of group are blocked in JoinGroup.
func (h *harness) waitJoined(group string, n int) {
	h.t.Helper()
	h.waitFor("joins", func() bool {
		g := h.c.groups[group]
		if g == nil {
			return n == 0
		}
		waiting := 0
		for _, m := range g.members {
			if m.join != nil {
				waiting++
			}
		}
		return waiting == n
	})
}

// waitSyncing waits until member is blocked in SyncGroup.
func (h *harness) waitSyncing(group, member string) {
	h.t.Helper()
	h.waitFor("sync", func() bool {
		g := h.c.groups[group]
		return g != nil && g.members[member] != nil && g.members[member].sync != nil
	})
}

func (h *harness) describe(group string) GroupDescription {
	h.t.Helper()
	d, err := h.c.Describe(group)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

func (h *harness) wantState(group string, want State) {
	h.t.Helper()
	if got := h.describe(group).State; got != want {
		h.t.Fatalf("group %s is %v, want %v", group, got, want)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

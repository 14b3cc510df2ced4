package client_test

// Group consumers against a real in-process node: partitions shared without
// overlap, a leave or a crash hands partitions over, fencing of stale
// commits.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
)

// groupSession is the smallest session timeout the server accepts by
// default: heartbeats every 2 s.
const groupSession = 6 * time.Second

// testMember runs a GroupConsumer's poll loop in a goroutine and records
// what it was assigned and read.
type testMember struct {
	gc     *client.GroupConsumer
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[string]bool // "topic/partition"
	recs     []client.ConsumedRecord
	err      error
}

// startMember joins group as a consumer of one topic, through the
// single-topic options and callbacks.
func startMember(t *testing.T, c *client.Client, group, topic string) *testMember {
	t.Helper()
	m := &testMember{assigned: map[string]bool{}, done: make(chan struct{})}
	m.start(t, c, client.GroupConsumerOptions{Group: group, Topic: topic,
		OnAssigned: func(ps []int32) { m.mark(map[string][]int32{topic: ps}, true) },
		OnRevoked:  func(ps []int32) { m.mark(map[string][]int32{topic: ps}, false) }})
	return m
}

// startTopicsMember joins group as a consumer of several topics.
func startTopicsMember(t *testing.T, c *client.Client, group string, topics ...string) *testMember {
	t.Helper()
	m := &testMember{assigned: map[string]bool{}, done: make(chan struct{})}
	m.start(t, c, client.GroupConsumerOptions{Group: group, Topics: topics,
		OnAssignedTopics: func(ps map[string][]int32) { m.mark(ps, true) },
		OnRevokedTopics:  func(ps map[string][]int32) { m.mark(ps, false) }})
	return m
}

// start makes the consumer (with the tests' session timeout) and its poll
// loop, stopped and closed when the test ends.
func (m *testMember) start(t *testing.T, c *client.Client, opts client.GroupConsumerOptions) {
	t.Helper()
	opts.SessionTimeout, opts.MaxWait = groupSession, 200*time.Millisecond
	gc, err := c.NewGroupConsumer(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	m.gc = gc
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			recs, err := gc.Poll(ctx)
			m.mu.Lock()
			m.recs = append(m.recs, recs...)
			if err != nil && ctx.Err() == nil && m.err == nil {
				m.err = err
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { m.stop(); gc.Close() })
}

// mark records partitions as held (on) or given up.
func (m *testMember) mark(parts map[string][]int32, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			if on {
				m.assigned[fmt.Sprintf("%s/%d", topic, p)] = true
			} else {
				delete(m.assigned, fmt.Sprintf("%s/%d", topic, p))
			}
		}
	}
}

// stop ends the poll loop (the member stays in the group until Close).
func (m *testMember) stop() {
	m.cancel()
	<-m.done
}

func (m *testMember) failure() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// topicPartitions is "topic/0" to "topic/n-1".
func topicPartitions(topic string, n int32) []string {
	var out []string
	for p := range n {
		out = append(out, fmt.Sprintf("%s/%d", topic, p))
	}
	return out
}

// holdExactly reports whether the members hold want between them, each
// partition once, each member at least one.
func holdExactly(want []string, ms ...*testMember) bool {
	held := map[string]int{}
	for _, m := range ms {
		m.mu.Lock()
		n := len(m.assigned)
		for tp := range m.assigned {
			held[tp]++
		}
		m.mu.Unlock()
		if n == 0 {
			return false
		}
	}
	if len(held) != len(want) {
		return false
	}
	for _, tp := range want {
		if held[tp] != 1 {
			return false
		}
	}
	return true
}

// seen counts each value read by the members.
func seen(ms ...*testMember) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		m.mu.Lock()
		for _, r := range m.recs {
			out[string(r.Value)]++
		}
		m.mu.Unlock()
	}
	return out
}

func TestGroupConsumersSplitPartitionsThenOneLeaves(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	const parts = 4
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	a := startMember(t, c, "billing", "orders")
	b := startMember(t, c, "billing", "orders")
	waitFor(t, 30*time.Second, "two members split the partitions", func() bool { return holdExactly(topicPartitions("orders", parts), a, b) })

	d, err := c.Admin().DescribeGroup(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "Stable" || len(d.Members) != 2 || d.Assignor != "cooperative-sticky" {
		t.Fatalf("describe: %+v", d)
	}
	for _, m := range d.Members {
		if len(m.Assignment["orders"]) != parts/2 {
			t.Fatalf("member %s has %v, want %d partitions each", m.MemberID, m.Assignment, parts/2)
		}
	}

	produceTo(t, c, "orders", 0, 200)
	waitFor(t, 20*time.Second, "every record read", func() bool { return len(seen(a, b)) == 200 })
	for v, n := range seen(a, b) {
		if n != 1 {
			t.Fatalf("record %s read %d times while the group was stable", v, n)
		}
	}

	// A leaves: B gets every partition and reads on from A's commits.
	a.stop()
	if err := a.gc.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the remaining member gets every partition", func() bool { return holdExactly(topicPartitions("orders", parts), b) })
	produceTo(t, c, "orders", 200, 100)
	waitFor(t, 20*time.Second, "every record read", func() bool { return len(seen(a, b)) == 300 })
	for v, n := range seen(a, b) {
		if n != 1 {
			t.Fatalf("record %s read %d times: a clean leave commits what was read", v, n)
		}
	}
	for _, m := range []*testMember{a, b} {
		if err := m.failure(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGroupConsumerKilledIsReplacedAfterSessionTimeout(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	// The member that dies has a connection of its own.
	c2, err := client.Dial(s.Addr(), client.WithRetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	a := startMember(t, c2, "billing", "orders")
	b := startMember(t, c, "billing", "orders")
	waitFor(t, 30*time.Second, "two members split the partitions", func() bool { return holdExactly(topicPartitions("orders", 3), a, b) })

	// A crashes: no more polls or heartbeats, no leave.
	a.stop()
	c2.Close()
	killed := time.Now()
	waitFor(t, 3*groupSession, "the survivor takes the dead member's partitions", func() bool { return holdExactly(topicPartitions("orders", 3), b) })
	if waited := time.Since(killed); waited < groupSession/2 {
		t.Fatalf("partitions moved %s after the crash, before the session timeout could pass", waited)
	}
	if err := b.failure(); err != nil {
		t.Fatal(err)
	}
}

func TestGroupCommitFromStaleGenerationIsRefused(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produceTo(t, c, "orders", 0, 10)
	a := startMember(t, c, "billing", "orders")
	waitFor(t, 10*time.Second, "the first member gets every partition", func() bool { return holdExactly(topicPartitions("orders", 2), a) })
	id, oldGen := a.gc.Member()
	b := startMember(t, c, "billing", "orders")
	waitFor(t, 30*time.Second, "two members split the partitions", func() bool { return holdExactly(topicPartitions("orders", 2), a, b) })
	if _, gen := a.gc.Member(); gen <= oldGen {
		t.Fatalf("generation %d after a rebalance, was %d", gen, oldGen)
	}

	admin := c.Admin()
	offs := []client.CommittedOffset{{Topic: "orders", Partition: 0, Offset: 1}}
	err := admin.CommitMemberOffsets(ctx, "billing", id, oldGen, offs)
	if !errors.Is(err, client.ErrIllegalGeneration) || !strings.Contains(err.Error(), "the group is at generation") {
		t.Fatalf("commit from generation %d: %v, want ErrIllegalGeneration naming the current one", oldGen, err)
	}
	if err := admin.CommitMemberOffsets(ctx, "billing", "zombie-1", oldGen, offs); !errors.Is(err, client.ErrUnknownMember) {
		t.Fatalf("commit from an unknown member: %v, want ErrUnknownMember", err)
	}
	if err := admin.CommitOffsets(ctx, "billing", offs); !errors.Is(err, client.ErrUnknownMember) {
		t.Fatalf("commit from outside a group with members: %v, want ErrUnknownMember", err)
	}
	// The member's own commit, at its current generation, is stored.
	if err := a.gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A group nobody joined still takes plain commits (manual assignment).
	if err := admin.CommitOffsets(ctx, "manual", offs); err != nil {
		t.Fatal(err)
	}
	got, err := admin.FetchOffsets(ctx, "manual", "orders")
	if err != nil || len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("manual group's offsets: %v %v", got, err)
	}
	ls, err := admin.ListMemberGroups(ctx)
	want := []client.GroupListing{{Group: "billing", State: "Stable"}, {Group: "manual", State: "Empty"}}
	if err != nil || !slices.Equal(ls, want) {
		t.Fatalf("list groups: %v %v, want %v", ls, err, want)
	}
}

// dialFailingLists dials addr with ListOffsets failing while the flag
// returned is set.
func dialFailingLists(t *testing.T, addr string) (*client.Client, *atomic.Bool) {
	t.Helper()
	return dialFailing(t, addr, "/ListOffsets")
}

// announcingMember is a GroupConsumer the test polls itself, with the
// partitions its callbacks announced.
type announcingMember struct {
	t         *testing.T
	gc        *client.GroupConsumer
	announced map[int32]bool // the callbacks run in Poll, on the test's goroutine
}

func joinAnnouncing(t *testing.T, c *client.Client, group, topic string) *announcingMember {
	t.Helper()
	m := &announcingMember{t: t, announced: map[int32]bool{}}
	gc, err := c.NewGroupConsumer(context.Background(), client.GroupConsumerOptions{Group: group, Topic: topic,
		SessionTimeout: groupSession, MaxWait: 200 * time.Millisecond,
		OnAssigned: func(ps []int32) {
			for _, p := range ps {
				m.announced[p] = true
			}
		},
		OnRevoked: func(ps []int32) {
			for _, p := range ps {
				delete(m.announced, p)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	m.gc = gc
	return m
}

// pollUntil polls until done says so (30 s at most), checking that every
// record returned is of a partition OnAssigned named.
func (m *announcingMember) pollUntil(what string, done func(recs []client.ConsumedRecord, err error) bool) {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		recs, err := m.gc.Poll(ctx)
		cancel()
		for _, r := range recs {
			if !m.announced[r.Partition] {
				m.t.Fatalf("Poll returned records of partition %d, which OnAssigned never named (assigned %v)", r.Partition, m.gc.Assigned())
			}
		}
		if done(recs, err) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("after 30s: %s (last Poll: %v)", what, err)
		}
	}
}

// A member whose reader fails to start after a rebalance (ListOffsets
// failing) starts it at its next Poll, and announces the partitions it
// gained then: OnAssigned is told of every partition Poll returns records
// of. A soak caught a member reading a partition it was never told of, so
// the application never learnt where its reads there began.
func TestGroupConsumerAnnouncesPartitionsOfAReaderStartedLate(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produceTo(t, c, "orders", 0, 40)
	cb, failLists := dialFailingLists(t, s.Addr())
	b := joinAnnouncing(t, cb, "billing", "orders")
	a := startMember(t, c, "billing", "orders")
	b.pollUntil("each member holds one partition", func([]client.ConsumedRecord, error) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(b.gc.Assigned()) == 1 && len(a.assigned) == 1
	})

	// A leaves; B's reader of both partitions fails to start once.
	failLists.Store(true)
	a.stop()
	if err := a.gc.Close(); err != nil {
		t.Fatal(err)
	}
	b.pollUntil("a Poll fails starting the reader", func(_ []client.ConsumedRecord, err error) bool {
		return err != nil && strings.Contains(err.Error(), "injected")
	})
	if got := b.gc.Assigned(); len(got) != 2 {
		t.Fatalf("B holds %v after A left, want both partitions", got)
	}
	failLists.Store(false)
	b.pollUntil("a Poll succeeds", func(_ []client.ConsumedRecord, err error) bool { return err == nil })
	for _, p := range b.gc.Assigned() {
		if !b.announced[p] {
			t.Fatalf("B reads partition %d, which OnAssigned never named (announced %v)", p, b.announced)
		}
	}
	produceTo(t, c, "orders", 40, 40)
	read := 0
	b.pollUntil("B reads the new records", func(recs []client.ConsumedRecord, err error) bool {
		read += len(recs)
		return read >= 40
	})
}

// dialFailing dials addr with calls whose method ends in suffix failing
// while the flag returned is set.
func dialFailing(t *testing.T, addr, suffix string) (*client.Client, *atomic.Bool) {
	t.Helper()
	fail := new(atomic.Bool)
	inject := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if fail.Load() && strings.HasSuffix(method, suffix) {
			return status.Errorf(codes.Internal, "injected: %s fails", suffix)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	c, err := client.Dial(addr, client.WithDialOptions(inject))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, fail
}

// A member the group forgot (its heartbeats lost past the session) while
// another member owned its partition and committed further, then joins
// again and gets the partition back, starts at the committed offset, not
// at its own old position. A torture soak saw such a member go on from its
// position and commit the group's offset backwards (18829 to 18802).
func TestGroupConsumerForgottenStartsAtCommittedOffsets(t *testing.T) {
	c, s := dialServer(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produceTo(t, c, "orders", 0, 5)
	ca, deaf := dialFailing(t, s.Addr(), "/Heartbeat")
	a := joinAnnouncing(t, ca, "billing", "orders")
	read := 0
	a.pollUntil("A reads the first records", func(recs []client.ConsumedRecord, err error) bool {
		read += len(recs)
		return read >= 5
	})
	if err := a.gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A's heartbeats fail: the group forgets it and B takes the partition,
	// reads on and commits past A's position, then leaves.
	deaf.Store(true)
	produceTo(t, c, "orders", 5, 5)
	b := joinAnnouncing(t, c, "billing", "orders")
	read = 0
	b.pollUntil("B reads the records after A's commit", func(recs []client.ConsumedRecord, err error) bool {
		read += len(recs)
		return read >= 5
	})
	if err := b.gc.Close(); err != nil {
		t.Fatal(err)
	}
	deaf.Store(false)
	waitFor(t, 30*time.Second, "A's heartbeat learns the group forgot it", func() bool {
		id, _ := a.gc.Member()
		return id == ""
	})

	produceTo(t, c, "orders", 10, 5)
	a.pollUntil("A joins again and reads", func(recs []client.ConsumedRecord, err error) bool {
		for _, r := range recs {
			if r.Offset < 10 {
				t.Fatalf("A read offset %d again: B committed 10 while A was out of the group", r.Offset)
			}
		}
		return len(recs) > 0
	})
}

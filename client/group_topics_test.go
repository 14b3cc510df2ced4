package client_test

// Group consumers of several topics: the group shares every partition of
// every subscribed topic; a deleted topic's partitions leave the members'
// assignments while they read on the others.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

// topicsMember runs a GroupConsumer of several topics in a goroutine.
type topicsMember struct {
	gc     *client.GroupConsumer
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[string]bool // "topic/partition"
	recs     []client.ConsumedRecord
	err      error
}

func startTopicsMember(t *testing.T, c *client.Client, group string, topics ...string) *topicsMember {
	t.Helper()
	m := &topicsMember{assigned: map[string]bool{}, done: make(chan struct{})}
	mark := func(parts map[string][]int32, on bool) {
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
	gc, err := c.NewGroupConsumer(context.Background(), client.GroupConsumerOptions{Group: group, Topics: topics,
		SessionTimeout: groupSession, MaxWait: 200 * time.Millisecond,
		OnAssignedTopics: func(ps map[string][]int32) { mark(ps, true) },
		OnRevokedTopics:  func(ps map[string][]int32) { mark(ps, false) }})
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
	t.Cleanup(func() { cancel(); <-m.done; gc.Close() })
	return m
}

// holdExactly reports whether the members hold want between them, each
// partition once, each member at least one.
func holdExactly(want []string, ms ...*topicsMember) bool {
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

// readOnce fails unless the members read each of vals exactly once, from
// the topic its prefix names.
func readOnce(t *testing.T, vals []string, ms ...*topicsMember) bool {
	t.Helper()
	count := map[string]int{}
	for _, m := range ms {
		m.mu.Lock()
		for _, r := range m.recs {
			if !strings.HasPrefix(string(r.Value), r.Topic+"-") {
				t.Fatalf("record %q read from topic %s", r.Value, r.Topic)
			}
			count[string(r.Value)]++
		}
		m.mu.Unlock()
	}
	for _, v := range vals {
		if count[v] == 0 {
			return false
		}
		if count[v] > 1 {
			t.Fatalf("record %s read %d times while the group was stable", v, count[v])
		}
	}
	return true
}

func produceTo(t *testing.T, c *client.Client, topic string, from, n int) []string {
	t.Helper()
	p := c.NewProducer(client.ProducerOptions{})
	defer p.Close()
	var vals []string
	var fs []*client.Future
	for i := from; i < from+n; i++ {
		v := fmt.Sprintf("%s-%d", topic, i)
		vals = append(vals, v)
		fs = append(fs, p.Produce(context.Background(), client.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}))
	}
	for _, f := range fs {
		if _, err := f.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return vals
}

func TestGroupConsumersOfSeveralTopicsAndATopicDeleted(t *testing.T) {
	c, _ := dialServer(t)
	ctx := context.Background()
	for topic, n := range map[string]int32{"orders": 4, "refunds": 2} {
		if _, err := c.Admin().CreateTopic(ctx, topic, client.TopicOptions{Partitions: n}); err != nil {
			t.Fatal(err)
		}
	}
	a := startTopicsMember(t, c, "billing", "orders", "refunds")
	b := startTopicsMember(t, c, "billing", "orders", "refunds")
	orders := []string{"orders/0", "orders/1", "orders/2", "orders/3"}
	all := append([]string{"refunds/0", "refunds/1"}, orders...)
	waitFor(t, 30*time.Second, "two members share the six partitions of both topics", func() bool { return holdExactly(all, a, b) })
	d, err := c.Admin().DescribeGroup(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Members {
		if n := len(m.Assignment["orders"]) + len(m.Assignment["refunds"]); n != 3 {
			t.Fatalf("member %s holds %v: want 3 partitions each", m.MemberID, m.Assignment)
		}
	}

	vals := append(produceTo(t, c, "orders", 0, 100), produceTo(t, c, "refunds", 0, 100)...)
	waitFor(t, 20*time.Second, "every record of both topics read once", func() bool { return readOnce(t, vals, a, b) })

	// The coordinator notices the deletion and takes refunds' partitions
	// away; the members read orders on.
	if err := c.Admin().DeleteTopic(ctx, "refunds"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deleted topic's partitions leave the assignment", func() bool { return holdExactly(orders, a, b) })
	vals = append(vals, produceTo(t, c, "orders", 100, 100)...)
	waitFor(t, 20*time.Second, "every record read once", func() bool { return readOnce(t, vals, a, b) })
	for _, m := range []*topicsMember{a, b} {
		m.mu.Lock()
		err := m.err
		m.mu.Unlock()
		if err != nil {
			t.Fatalf("a member's Poll failed: %v", err)
		}
	}
}

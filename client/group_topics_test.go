package client_test

// Group consumers of several topics: the group shares every partition of
// every subscribed topic; a deleted topic's partitions leave the members'
// assignments while they read on the others.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

// readOnce fails unless the members read each of vals exactly once, from
// the topic its prefix names.
func readOnce(t *testing.T, vals []string, ms ...*testMember) bool {
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
	for _, m := range []*testMember{a, b} {
		if err := m.failure(); err != nil {
			t.Fatalf("a member's Poll failed: %v", err)
		}
	}
}

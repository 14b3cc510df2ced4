package main

// `logd consume` of several topics as group members.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// produceTo produces "<topic>-<i>" with key "k<i>" to topic for i in
// [from, to).
func produceTo(t *testing.T, srv []string, topic string, from, to int) {
	t.Helper()
	var in strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&in, "k%d:%s-%d\n", i, topic, i)
	}
	okBin(t, nil, in.String(), append([]string{"produce", topic, "--key-delimiter", ":"}, srv...)...)
}

func TestBinConsumeGroupOfSeveralTopics(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "")
	srv := []string{"--server", n.addr}
	okBin(t, nil, "", append([]string{"topic", "create", "orders", "--partitions", "4"}, srv...)...)
	okBin(t, nil, "", append([]string{"topic", "create", "refunds", "--partitions", "2"}, srv...)...)
	failBin(t, nil, "", "several topics are read as a group member", append([]string{"consume", "orders", "refunds", "--group", "billing"}, srv...)...)
	failBin(t, nil, "", `topic "orders" is named twice`, append([]string{"consume", "orders", "orders", "--group", "billing", "--follow"}, srv...)...)

	args := append([]string{"orders", "refunds", "--group", "billing", "--follow", "--commit", "--from", "earliest", "--session-timeout", "6s"}, srv...)
	a, b := startConsume(t, args...), startConsume(t, args...)
	eventually(t, 40*time.Second, "two members share the six partitions of both topics, three each", func() bool {
		g := describeJSON(t, n.addr, "billing")
		if g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			if len(m.Assignment["orders"])+len(m.Assignment["refunds"]) != 3 {
				return false
			}
		}
		return true
	})
	produceTo(t, srv, "orders", 0, 100)
	produceTo(t, srv, "refunds", 0, 100)
	want := func() []string {
		var w []string
		for i := range 100 {
			w = append(w, fmt.Sprintf("orders-%d", i), fmt.Sprintf("refunds-%d", i))
		}
		return w
	}()
	count := func() map[string]int {
		seen := map[string]int{}
		for _, p := range []*consumeProc{a, b} {
			for _, l := range p.printed() {
				seen[l]++
			}
		}
		return seen
	}
	eventually(t, 30*time.Second, "every record of both topics printed", func() bool {
		seen := count()
		for _, v := range want {
			if seen[v] == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
	seen := count()
	for _, v := range want {
		if seen[v] != 1 {
			t.Fatalf("%s printed %d times across the members", v, seen[v])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d distinct lines printed, want %d", len(seen), len(want))
	}
	eventually(t, 20*time.Second, "the group commits every partition of both topics", func() bool {
		g := describeJSON(t, n.addr, "billing")
		return len(g.Partitions) == 6 && committedToEnd(g)
	})
}

package main

// Consumer groups with real processes: three members on six partitions,
// one killed; a member paused past its session timeout is fenced.

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// printedAll reports whether the lines printed by procs hold v<from> to
// v<to-1>.
func printedAll(from, to int, procs ...*consumeProc) bool {
	got := map[string]bool{}
	for _, p := range procs {
		for _, l := range p.printed() {
			got[l] = true
		}
	}
	for i := from; i < to; i++ {
		if !got[fmt.Sprintf("v%d", i)] {
			return false
		}
	}
	return true
}

// printedOnce fails unless v<from> to v<to-1> were printed exactly once
// across procs.
func printedOnce(t *testing.T, from, to int, procs ...*consumeProc) {
	t.Helper()
	seen := map[string]int{}
	for _, p := range procs {
		for _, l := range p.printed() {
			seen[l]++
		}
	}
	for i := from; i < to; i++ {
		if c := seen[fmt.Sprintf("v%d", i)]; c != 1 {
			t.Fatalf("v%d printed %d times across the members", i, c)
		}
	}
}

// committedToEnd reports whether the group committed every partition up
// to its high watermark.
func committedToEnd(g groupJSON) bool {
	for _, p := range g.Partitions {
		if p.Committed == nil || *p.Committed != p.HighWatermark {
			return false
		}
	}
	return len(g.Partitions) > 0
}

// The case: three `logd consume --group` processes on a
// six-partition topic get two partitions each and print every record once;
// one killed with kill -9, the other two share its partitions from its last
// commits.
func TestBinConsumeGroupThreeMembersSixPartitions(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "")
	srv := []string{"--server", n.addr}
	okBin(t, nil, "", append([]string{"topic", "create", "orders", "--partitions", "6"}, srv...)...)
	args := append([]string{"orders", "--group", "billing", "--follow", "--commit", "--from", "earliest", "--session-timeout", "6s"}, srv...)
	ps := []*consumeProc{startConsume(t, args...), startConsume(t, args...), startConsume(t, args...)}
	eventually(t, 60*time.Second, "three consumers get two partitions each", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 3, 6) })

	produceRange(t, srv, 0, 300)
	eventually(t, 30*time.Second, "every record printed", func() bool { return printedAll(0, 300, ps...) })
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
	printedOnce(t, 0, 300, ps...)
	for i, p := range ps {
		if len(p.printed()) == 0 {
			t.Fatalf("consumer %d printed nothing", i)
		}
	}

	ps[0].cmd.Process.Kill()
	<-ps[0].exited
	eventually(t, 60*time.Second, "the two survivors share the six partitions", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 2, 6) })
	produceRange(t, srv, 300, 400)
	eventually(t, 30*time.Second, "the survivors print every record produced after the kill", func() bool { return printedAll(300, 400, ps[1:]...) })
	time.Sleep(500 * time.Millisecond)
	printedOnce(t, 300, 400, ps[1:]...)
	if !printedAll(0, 400, ps...) {
		t.Fatal("a record was never printed")
	}
	eventually(t, 20*time.Second, "the group commits every partition to its end", func() bool { return committedToEnd(describeJSON(t, n.addr, "billing")) })
}

// A member SIGSTOPped past its session timeout is removed and its
// partitions go to the other member; after SIGCONT it is fenced and joins
// again, and no commit of it moves an offset back. Fenced is one of two
// things, whichever the resumed process reaches first: a Poll under way
// returns the records it still held, they are printed and their commit is
// refused (the other member committed them); or its heartbeat learns the
// group forgot it, and it drops those partitions without a commit
// (Kafka's lost partitions). Which one comes first is a race between its
// own goroutines after SIGCONT.
func TestBinConsumeGroupPausedMemberIsFenced(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "")
	srv, a, b := twoMembers(t, n, "--commit")
	produceRange(t, srv, 0, 100)
	eventually(t, 20*time.Second, "every record printed", func() bool { return printedAll(0, 100, a, b) })
	time.Sleep(500 * time.Millisecond)
	printedOnce(t, 0, 100, a, b)

	// Paused, a still holds its partitions' streams: the records produced
	// now reach it, unprinted.
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	produceRange(t, srv, 100, 200)
	eventually(t, 40*time.Second, "the group removes the paused member", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 1, 4) })
	eventually(t, 20*time.Second, "the other member prints the paused one's records", func() bool { return printedAll(100, 200, b) })
	eventually(t, 20*time.Second, "the group commits every partition to its end", func() bool { return committedToEnd(describeJSON(t, n.addr, "billing")) })
	before := describeJSON(t, n.addr, "billing")

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	refused := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return strings.Contains(a.stderr.String(), "the group refused this member's commit")
	}
	eventually(t, 40*time.Second, "the resumed member joins again", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 2, 4) })
	if refused() {
		t.Log("the resumed member printed the records it held and its commit was refused")
	} else {
		t.Log("the resumed member learned it was forgotten first and dropped its partitions without a commit")
	}
	after := describeJSON(t, n.addr, "billing")
	for i, p := range after.Partitions {
		if *p.Committed < *before.Partitions[i].Committed {
			t.Fatalf("partition %d: committed offset went back from %d to %d: the fenced member's commit landed", p.Partition, *before.Partitions[i].Committed, *p.Committed)
		}
	}

	produceRange(t, srv, 200, 300)
	eventually(t, 20*time.Second, "every record printed", func() bool { return printedAll(200, 300, a, b) })
	time.Sleep(500 * time.Millisecond)
	printedOnce(t, 200, 300, a, b)
	if !printedAll(0, 300, a, b) {
		t.Fatal("a record was never printed")
	}
	eventually(t, 20*time.Second, "the group commits every partition to its end", func() bool { return committedToEnd(describeJSON(t, n.addr, "billing")) })
}

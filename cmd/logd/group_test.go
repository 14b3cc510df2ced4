package main

// Consumer groups with the real binary: `logd consume --group --follow`
// processes share a topic's partitions.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/logdbin"
)

// consumeProc is a running `logd consume` and the lines it printed.
type consumeProc struct {
	cmd    *exec.Cmd
	exited chan error
	mu     sync.Mutex
	lines  []string
	stderr strings.Builder
}

func startConsume(t *testing.T, args ...string) *consumeProc {
	t.Helper()
	cmd := exec.Command(logdbin.Binary(t), append([]string{"consume"}, args...)...)
	cmd.Env = cleanEnv()
	p := &consumeProc{cmd: cmd, exited: make(chan error, 1)}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() { <-read; p.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

func (p *consumeProc) printed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// describeJSON runs `logd group describe --json`.
func describeJSON(t *testing.T, addr, group string) groupJSON {
	t.Helper()
	var g groupJSON
	r := runBin(t, nil, "", "group", "describe", group, "--json", "--server", addr)
	if r.code != 0 && strings.Contains(r.stderr, "not found") {
		return g // no member joined yet
	}
	out := r.stdout
	if r.code != 0 {
		t.Fatalf("group describe: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("group describe --json: %v\n%s", err, out)
	}
	return g
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stableWith reports whether the group is Stable with n members that
// each read parts/n partitions.
func stableWith(g groupJSON, n, parts int) bool {
	if g.State != "Stable" || len(g.Members) != n {
		return false
	}
	for _, m := range g.Members {
		if len(m.Assignment["orders"]) != parts/n {
			return false
		}
	}
	return true
}

// twoMembers creates topic orders (4 partitions) on n and starts two
// `logd consume --follow` processes in group billing (with flags), and
// waits until they share the partitions. srv is the --server flag.
func twoMembers(t *testing.T, n *binNode, flags ...string) (srv []string, a, b *consumeProc) {
	t.Helper()
	srv = []string{"--server", n.addr}
	okBin(t, nil, "", append([]string{"topic", "create", "orders", "--partitions", "4"}, srv...)...)
	args := append([]string{"orders", "--group", "billing", "--follow", "--from", "earliest", "--session-timeout", "6s"}, flags...)
	args = append(args, srv...)
	a, b = startConsume(t, args...), startConsume(t, args...)
	eventually(t, 40*time.Second, "two consumers share the 4 partitions", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 2, 4) })
	return srv, a, b
}

func TestBinConsumeGroupSharesPartitions(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
	srv, a, b := twoMembers(t, n)

	if m := n.get(t, "/metrics"); !strings.Contains(m, `logd_group_members{group="billing"} 2`) {
		t.Fatalf("/metrics has no logd_group_members of 2 for the group:\n%s", m)
	}

	produceRange(t, srv, 0, 200)
	eventually(t, 20*time.Second, "every record printed", func() bool { return len(a.printed())+len(b.printed()) >= 200 })
	time.Sleep(500 * time.Millisecond) // a duplicate would show now
	checkDisjoint(t, 200, a.printed(), b.printed())
	if len(a.printed()) == 0 || len(b.printed()) == 0 {
		t.Fatalf("one consumer printed nothing: %d and %d records", len(a.printed()), len(b.printed()))
	}

	// SIGTERM: a commits what it printed, leaves, and exits 0; b takes over.
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.exited:
		if err != nil {
			t.Fatalf("consume after SIGTERM: %v\n%s", err, a.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("consume did not stop within 20s of SIGTERM")
	}
	eventually(t, 20*time.Second, "the remaining consumer reads every partition", func() bool { return stableWith(describeJSON(t, n.addr, "billing"), 1, 4) })
	produceRange(t, srv, 200, 300)
	eventually(t, 20*time.Second, "every record printed", func() bool { return len(a.printed())+len(b.printed()) >= 300 })
	time.Sleep(500 * time.Millisecond)
	checkDisjoint(t, 300, a.printed(), b.printed())

	g := describeJSON(t, n.addr, "billing")
	for _, p := range g.Partitions {
		if p.Committed == nil || p.Member == "" {
			t.Fatalf("partition %d: committed %v, member %q: a left member commits, the survivor reads it", p.Partition, p.Committed, p.Member)
		}
	}
	if out := okBin(t, nil, "", append([]string{"group", "list"}, srv...)...); !strings.Contains(out, "billing  Stable") {
		t.Fatalf("group list:\n%s", out)
	}
	table := okBin(t, nil, "", append([]string{"group", "describe", "billing"}, srv...)...)
	if !strings.Contains(table, "group billing: Stable") || !strings.Contains(table, "orders/0,1,2,3") {
		t.Fatalf("group describe:\n%s", table)
	}
}

// checkDisjoint fails unless the consumers printed v0..v(n-1) once in all.
func checkDisjoint(t *testing.T, n int, outs ...[]string) {
	t.Helper()
	seen := map[string]int{}
	for _, out := range outs {
		for _, l := range out {
			seen[l]++
		}
	}
	for i := range n {
		if c := seen[fmt.Sprintf("v%d", i)]; c != 1 {
			t.Fatalf("v%d printed %d times across the consumers (%d and %d lines)", i, c, len(outs[0]), len(outs[1]))
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct lines printed, want %d", len(seen), n)
	}
}

func TestBinConsumeGroupKilledMemberIsReplaced(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "")
	srv, a, b := twoMembers(t, n, "--commit")
	produceRange(t, srv, 0, 200)
	eventually(t, 20*time.Second, "every record printed", func() bool { return len(a.printed())+len(b.printed()) >= 200 })

	// kill -9: no commit, no leave. After its session timeout the other
	// member reads its partitions from the last commits: nothing skipped.
	a.cmd.Process.Kill()
	<-a.exited
	produceRange(t, srv, 200, 300)
	eventually(t, 40*time.Second, "the survivor prints every record produced after the kill", func() bool {
		got := map[string]bool{}
		for _, l := range b.printed() {
			got[l] = true
		}
		for i := 200; i < 300; i++ {
			if !got[fmt.Sprintf("v%d", i)] {
				return false
			}
		}
		return true
	})
	seen := map[string]bool{}
	for _, l := range append(a.printed(), b.printed()...) {
		seen[l] = true
	}
	for i := range 300 {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Fatalf("v%d was never printed", i)
		}
	}
	if g := describeJSON(t, n.addr, "billing"); !stableWith(g, 1, 4) {
		t.Fatalf("after the kill: %+v", g)
	}
}

// produceRange produces "v<i>" with key "k<i>" for i in [from, to).
func produceRange(t *testing.T, srv []string, from, to int) {
	t.Helper()
	var in strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	okBin(t, nil, in.String(), append([]string{"produce", "orders", "--key-delimiter", ":"}, srv...)...)
}

// A group member without --commit commits what it printed every
// --auto-commit-interval while it runs, so group describe's lag is true;
// with an interval of 0 it commits nothing until it stops.
func TestBinConsumeGroupAutoCommits(t *testing.T) {
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "")
	srv, a, b := twoMembers(t, n, "--auto-commit-interval", "1s")
	produceRange(t, srv, 0, 200)
	eventually(t, 20*time.Second, "every record printed", func() bool { return len(a.printed())+len(b.printed()) >= 200 })
	eventually(t, 20*time.Second, "the running members commit every partition to its end", func() bool {
		return committedToEnd(describeJSON(t, n.addr, "billing"))
	})
	checkDisjoint(t, 200, a.printed(), b.printed())

	okBin(t, nil, "", append([]string{"topic", "create", "quiet", "--partitions", "1"}, srv...)...)
	c := startConsume(t, append([]string{"quiet", "--group", "silent", "--follow", "--from", "earliest", "--auto-commit-interval", "0"}, srv...)...)
	okBin(t, nil, "x\n", append([]string{"produce", "quiet"}, srv...)...)
	eventually(t, 20*time.Second, "the record printed", func() bool { return len(c.printed()) == 1 })
	time.Sleep(2 * time.Second)
	g := describeJSON(t, n.addr, "silent")
	if len(g.Partitions) != 1 {
		t.Fatalf("group silent describes %d partitions, want quiet's one", len(g.Partitions))
	}
	for _, p := range g.Partitions {
		if p.Committed != nil {
			t.Fatalf("a member with --auto-commit-interval 0 committed %d while running", *p.Committed)
		}
	}
}

package main

// End-to-end tests: the cobra commands run in-process against a real node
// (nodetest), with standard input and output captured.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/routing"
)

type cli struct {
	t    *testing.T
	addr string
}

func startCLI(t *testing.T, mutate ...func(*node.Config)) *cli {
	return &cli{t: t, addr: nodetest.Start(t, mutate...).Addr()}
}

// run runs `logd args... --server addr` with stdin, returning stdout, stderr
// and the error main would print.
func (c *cli) run(stdin string, args ...string) (string, string, error) {
	c.t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append(args, "--server", c.addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// ok runs and fails the test on an error.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, _, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("logd %s: %v", strings.Join(args, " "), err)
	}
	return out
}

type jsonLine struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Timestamp string  `json:"timestamp"`
}

func parseJSONLines(t *testing.T, out string) []jsonLine {
	t.Helper()
	var recs []jsonLine
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var j jsonLine
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		recs = append(recs, j)
	}
	return recs
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCLITopicCommands(t *testing.T) {
	c := startCLI(t)
	out := c.ok("", "topic", "create", "orders", "--partitions", "3", "--retention-time", "2d", "--retention-bytes", "1GiB")
	if !strings.Contains(out, "created topic orders: 3 partitions") || !strings.Contains(out, "retention time 2d, bytes 1 GiB") {
		t.Fatalf("create: %q", out)
	}
	if out := c.ok("", "topic", "list"); !strings.Contains(out, "orders") || !strings.Contains(out, "2d") {
		t.Fatalf("list: %q", out)
	}
	out = c.ok("", "topic", "alter", "orders", "--retention-records", "1000", "--retention-time", "unlimited")
	if !strings.Contains(out, "retention time unlimited") || !strings.Contains(out, "records 1000") {
		t.Fatalf("alter: %q", out)
	}
	c.ok("a\nb\n", "produce", "orders", "--partition", "2")
	out = c.ok("", "topic", "describe", "orders")
	for _, want := range []string{"PARTITION", "LOG-START", "HIGH-WATERMARK", "SIZE", "SEGMENTS", "\n2  "} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	t.Logf("describe:\n%s", out)
	if _, _, err := c.run("", "topic", "create", "orders"); err == nil || !strings.Contains(err.Error(), "orders") {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, _, err := c.run("", "topic", "create", "bad/name"); err == nil || !strings.Contains(err.Error(), "invalid topic name") {
		t.Fatalf("bad name: %v", err)
	}
	if _, _, err := c.run("", "topic", "alter", "orders"); err == nil || !strings.Contains(err.Error(), "nothing to change") {
		t.Fatalf("alter without flags: %v", err)
	}
	if _, _, err := c.run("", "topic", "create", "x", "--retention-bytes", "12XB"); err == nil || !strings.Contains(err.Error(), "--retention-bytes") {
		t.Fatalf("bad size: %v", err)
	}
	c.ok("", "topic", "delete", "orders")
	if _, _, err := c.run("", "topic", "describe", "orders"); err == nil || strings.Contains(err.Error(), "rpc error") {
		t.Fatalf("describe a deleted topic: %v", err)
	}
}

func TestCLIProduceKeyedConsumeJSON(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "ev", "--partitions", "4")
	in := lines(200, func(i int) string { return fmt.Sprintf("user-%d:event %d", i%7, i) })
	c.ok(in, "produce", "ev", "--key-delimiter", ":")
	recs := parseJSONLines(t, c.ok("", "consume", "ev", "--json"))
	if len(recs) != 200 {
		t.Fatalf("consumed %d records, want 200", len(recs))
	}
	last := map[string]int{}
	for _, r := range recs {
		if r.Key == nil || r.Topic != "ev" || r.Timestamp == "" {
			t.Fatalf("bad record %+v", r)
		}
		if want := routing.ForKey([]byte(*r.Key), 4); r.Partition != want {
			t.Fatalf("key %s in partition %d, want %d", *r.Key, r.Partition, want)
		}
		var i int
		fmt.Sscanf(r.Value, "event %d", &i)
		if prev, ok := last[*r.Key]; ok && i <= prev {
			t.Fatalf("key %s: event %d after %d", *r.Key, i, prev)
		}
		last[*r.Key] = i
	}

	// --key: every line gets it; default output is the values.
	c.ok("", "topic", "create", "one")
	c.ok("x\ny\n", "produce", "one", "--key", "k", "--acks", "leader")
	if out := c.ok("", "consume", "one"); out != "x\ny\n" {
		t.Fatalf("values: %q", out)
	}
	if out := c.ok("", "consume", "one", "--format", `%k=%s@%o`); out != "k=x@0\nk=y@1\n" {
		t.Fatalf("format: %q", out)
	}
}

func TestCLIConsumeCountAndFrom(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t")
	c.ok(lines(50, func(i int) string { return fmt.Sprint(i) }), "produce", "t")
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	c.ok(lines(10, func(i int) string { return fmt.Sprint(50 + i) }), "produce", "t")

	if out := c.ok("", "consume", "t", "--count", "3"); out != "0\n1\n2\n" {
		t.Fatalf("--count 3: %q", out)
	}
	if out := c.ok("", "consume", "t", "--from", "57"); out != "57\n58\n59\n" {
		t.Fatalf("--from 57: %q", out)
	}
	out := c.ok("", "consume", "t", "--from", mid.UTC().Format(time.RFC3339Nano))
	if got := strings.Fields(out); len(got) != 10 || got[0] != "50" {
		t.Fatalf("--from %s: %q", mid.Format(time.RFC3339Nano), out)
	}
	if got := strings.Fields(c.ok("", "consume", "t", "--from", "-1h")); len(got) != 60 {
		t.Fatalf("--from -1h: %d records", len(got))
	}
	if out := c.ok("", "consume", "t", "--from", "latest"); out != "" {
		t.Fatalf("--from latest: %q", out)
	}
	if _, _, err := c.run("", "consume", "t", "--from", "yesterday"); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Fatalf("bad --from: %v", err)
	}
}

func TestCLIConsumeFollow(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t")
	done := make(chan string)
	go func() {
		out, _, _ := c.run("", "consume", "t", "--follow", "--count", "2", "--max-wait", "100ms")
		done <- out
	}()
	time.Sleep(200 * time.Millisecond)
	c.ok("a\nb\n", "produce", "t")
	select {
	case out := <-done:
		if out != "a\nb\n" {
			t.Fatalf("--follow: %q", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("--follow --count 2 did not return after two records")
	}
}

func TestCLIGroupCommitPrintedOnly(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok(lines(100, func(i int) string { return fmt.Sprint(i) }), "produce", "t", "--partition", "0")

	if got := strings.Fields(c.ok("", "consume", "t", "--group", "g", "--count", "40", "--commit")); len(got) != 40 || got[39] != "39" {
		t.Fatalf("first 40: %v", got)
	}
	// The group is at the 41st record.
	out := c.ok("", "offsets", "show", "--group", "g", "t", "--json")
	var rows []struct {
		Partition     int32  `json:"partition"`
		Committed     *int64 `json:"committed_offset"`
		HighWatermark int64  `json:"high_watermark"`
		Lag           int64  `json:"lag"`
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Partition     int32  `json:"partition"`
			Committed     *int64 `json:"committed_offset"`
			HighWatermark int64  `json:"high_watermark"`
			Lag           int64  `json:"lag"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 2 || rows[0].Committed == nil || *rows[0].Committed != 40 || rows[0].HighWatermark != 100 || rows[0].Lag != 60 {
		t.Fatalf("offsets show --json: %s", out)
	}
	if rows[1].Committed != nil {
		t.Fatalf("partition 1 has a commit: %s", out)
	}
	if got := strings.Fields(c.ok("", "consume", "t", "--group", "g", "--count", "1")); len(got) != 1 || got[0] != "40" {
		t.Fatalf("resume: %v, want the 41st record (40)", got)
	}
	// Without --commit nothing moved; with it, the rest.
	if got := strings.Fields(c.ok("", "consume", "t", "--group", "g", "--commit")); len(got) != 60 {
		t.Fatalf("rest: %d records", len(got))
	}
	table := c.ok("", "offsets", "show", "--group", "g")
	if !strings.Contains(table, "COMMITTED") || !strings.Contains(table, "LAG") {
		t.Fatalf("table: %q", table)
	}
	t.Logf("offsets show:\n%s", table)

	out = c.ok("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "10", "--partition", "0")
	if !strings.Contains(out, "reset group g on t (asked for offset 10); stored:") {
		t.Fatalf("reset: %q", out)
	}
	if got := strings.Fields(c.ok("", "consume", "t", "--group", "g", "--count", "1")); len(got) != 1 || got[0] != "10" {
		t.Fatalf("after reset: %v", got)
	}
	c.ok("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "earliest")
	if got := strings.Fields(c.ok("", "consume", "t", "--group", "g", "--count", "1")); got[0] != "0" {
		t.Fatalf("after reset to earliest: %v", got)
	}
	if _, _, err := c.run("", "offsets", "show"); err == nil || !strings.Contains(err.Error(), "g") {
		t.Fatalf("show without --group: %v", err)
	}
}

func TestCLIErrorsAreOneClearLine(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t")
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"consume", "missing"}, "missing"},
		{"", []string{"produce", "missing"}, "missing"},
		{"", []string{"consume", "t", "--commit"}, "--commit needs --group"},
		{"", []string{"consume", "t", "--partition", "5"}, "5"},
		{"a\n", []string{"produce", "t", "--partition", "3"}, "partitions 0 to 0"},
		{"k:v\nnodelim\n", []string{"produce", "t", "--key-delimiter", ":"}, "line 2 has no key delimiter"},
		{"", []string{"produce", "t", "--acks", "some"}, "--acks"},
		{"", []string{"consume"}, "missing TOPIC"},
		{strings.Repeat("x", 2<<20) + "\n", []string{"produce", "t"}, "1 of 1 records were not acknowledged"},
	} {
		_, _, err := c.run(tc.stdin, tc.args...)
		if err == nil {
			t.Errorf("logd %v: no error", tc.args)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "rpc error") {
			t.Errorf("logd %v: %q, want one line mentioning %q", tc.args, msg, tc.want)
		}
		t.Logf("logd %v: %s", tc.args, msg)
	}

	down := &cli{t: t, addr: "127.0.0.1:1"}
	_, _, err := down.run("", "topic", "list")
	if err == nil || !strings.Contains(err.Error(), "cannot reach logd at 127.0.0.1:1: is `logd serve` running?") {
		t.Fatalf("unreachable server: %v", err)
	}
}

func TestCLIClusterStatus(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	out := c.ok("", "cluster", "status")
	if !strings.Contains(out, "NODE") || !strings.Contains(out, c.addr) || !strings.Contains(out, "TOPIC") {
		t.Fatalf("cluster status:\n%s", out)
	}
	t.Logf("cluster status:\n%s", out)
}

// Retention removes records a group had not consumed: offsets show marks
// it, the group resumes at the log start with a warning, and asking for a
// removed offset is a clear error.
func TestCLIRetentionTrimmedGroup(t *testing.T) {
	c := startCLI(t, func(cfg *node.Config) { cfg.RetentionInterval = 50 * time.Millisecond })
	c.ok("", "topic", "create", "r", "--segment-bytes", "4KiB")
	value := strings.Repeat("v", 500)
	for b := range 10 { // one produce, hence at least one batch, per 10 lines
		c.ok(lines(10, func(i int) string { return fmt.Sprintf("%d-%s", b*10+i, value) }), "produce", "r")
	}
	c.ok("", "consume", "r", "--group", "g", "--count", "5", "--commit")
	out := c.ok("", "topic", "alter", "r", "--retention-records", "10")
	if !strings.Contains(out, "records 10") {
		t.Fatalf("alter: %q", out)
	}
	var start int64
	deadline := time.Now().Add(10 * time.Second)
	for start <= 5 {
		if time.Now().After(deadline) {
			t.Fatalf("retention did not trim: %s", c.ok("", "topic", "describe", "r"))
		}
		time.Sleep(50 * time.Millisecond)
		var row struct {
			LogStart int64 `json:"log_start_offset"`
			Trimmed  bool  `json:"trimmed"`
		}
		json.Unmarshal([]byte(c.ok("", "offsets", "show", "--group", "g", "r", "--json")), &row)
		start = row.LogStart
		if start > 5 && !row.Trimmed {
			t.Fatalf("offset 5 below log start %d not marked trimmed", start)
		}
	}
	table := c.ok("", "offsets", "show", "--group", "g", "r")
	if !strings.Contains(table, fmt.Sprintf("trimmed: %d records removed by retention", start-5)) {
		t.Fatalf("offsets show does not mark the trimmed offset:\n%s", table)
	}
	t.Logf("after trim:\n%s%s", c.ok("", "topic", "describe", "r"), table)

	// A reset below the log start stores the log start, and says so.
	if out := c.ok("", "offsets", "reset", "--execute", "--group", "other", "r", "--to", "0"); !strings.Contains(out,
		fmt.Sprintf("clamped: offset 0 was removed by retention; stored the log start, %d", start)) {
		t.Fatalf("reset below the log start:\n%s", out)
	}
	_, _, err := c.run("", "consume", "r", "--from", "0")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("offset 0 of r/0 was removed by retention: the partition now starts at %d", start)) {
		t.Fatalf("--from 0 after trim: %v", err)
	}
	out, stderr, err := c.run("", "consume", "r", "--group", "g", "--commit")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "removed by retention") || !strings.Contains(stderr, fmt.Sprintf("%d records lost", start-5)) {
		t.Fatalf("no warning on stderr: %q", stderr)
	}
	got := strings.Fields(out)
	if int64(len(got)) != 100-start || !strings.HasPrefix(got[0], fmt.Sprintf("%d-", start)) {
		t.Fatalf("resumed with %d records from %.10q, want %d from %d", len(got), got[0], 100-start, start)
	}
}

// consume --follow rides out a server restart.
func TestCLIFollowSurvivesRestart(t *testing.T) {
	cfg := node.Config{Config: broker.Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, Addr: "127.0.0.1:0"}
	s, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = s.Addr()
	c := &cli{t: t, addr: s.Addr()}
	c.ok("", "topic", "create", "t")
	c.ok("a\n", "produce", "t")
	type result struct{ out, stderr string }
	done := make(chan result)
	go func() {
		out, stderr, _ := c.run("", "consume", "t", "--follow", "--from", "earliest", "--count", "2", "--max-wait", "100ms")
		done <- result{out, stderr}
	}()
	time.Sleep(300 * time.Millisecond)
	s.Close()
	time.Sleep(700 * time.Millisecond)
	if s, err = node.Start(cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.ok("b\n", "produce", "t")
	select {
	case r := <-done:
		// The consumer was reading: a node that stops answering is
		// restarting, not "not running".
		if r.out != "a\nb\n" || !strings.Contains(r.stderr, "retrying") || strings.Contains(r.stderr, "logd serve") {
			t.Fatalf("stdout %q, stderr %q", r.out, r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("consume --follow did not resume after the restart")
	}
}

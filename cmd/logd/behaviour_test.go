package main

// The CLI behaviours of issue 15, each run through the real binary against
// an in-process node.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/logdbin"
	"github.com/logd/logd/internal/node/nodetest"
)

// binAt runs the binary's client commands against one node.
type binAt struct {
	t    *testing.T
	addr string
}

func newBinAt(t *testing.T) binAt { return binAt{t, nodetest.Start(t).Addr()} }

func (b binAt) ok(stdin string, args ...string) string {
	b.t.Helper()
	return okBin(b.t, nil, stdin, append(args, "--server", b.addr)...)
}

func (b binAt) run(stdin string, args ...string) binResult {
	b.t.Helper()
	return runBin(b.t, nil, stdin, append(args, "--server", b.addr)...)
}

// background starts `logd args... --server addr` and returns its stdout
// once it exits.
func (b binAt) background(args ...string) (*exec.Cmd, *strings.Builder, chan struct{}) {
	b.t.Helper()
	cmd := exec.Command(logdbin.Binary(b.t), append(args, "--server", b.addr)...)
	cmd.Env = cleanEnv()
	out := &syncBuilder{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	b.t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd, &out.b, done
}

// syncBuilder is a strings.Builder written by exec's copier goroutine and
// read after the process exits.
type syncBuilder struct{ b strings.Builder }

func (s *syncBuilder) Write(p []byte) (int, error) { return s.b.Write(p) }

// consume --follow without --from tails: it prints what is produced after
// it started, not the history.
func TestBinConsumeFollowStartsAtTheEnd(t *testing.T) {
	b := newBinAt(t)
	b.ok("", "topic", "create", "t")
	b.ok("old1\nold2\n", "produce", "t")
	_, out, done := b.background("consume", "t", "--follow", "--count", "1")
	// Produce until the consumer, whenever it reached the end, prints one.
	for i := 0; ; i++ {
		select {
		case <-done:
			if got := out.String(); !strings.HasPrefix(got, "new-") {
				t.Fatalf("consume --follow printed %q first, want a record produced after it started", got)
			}
			// With --from it replays, then follows.
			_, out, done = b.background("consume", "t", "--follow", "--from", "earliest", "--count", "3")
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("consume --follow --from earliest --count 3 did not return")
			}
			if got := strings.Fields(out.String()); len(got) != 3 || got[0] != "old1" || got[1] != "old2" {
				t.Fatalf("--follow --from earliest: %q", got)
			}
			return
		case <-time.After(200 * time.Millisecond):
			b.ok(fmt.Sprintf("new-%d\n", i), "produce", "t")
		}
		if i > 150 {
			t.Fatal("consume --follow printed nothing")
		}
	}
}

type offsetLine struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	Committed       *int64 `json:"committed_offset"`
	HighWatermark   int64  `json:"high_watermark"`
	Lag             int64  `json:"lag"`
	RequestedOffset *int64 `json:"requested_offset"`
	Clamped         string `json:"clamped"`
}

func offsetLines(t *testing.T, out string) []offsetLine {
	t.Helper()
	var rows []offsetLine
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r offsetLine
		okJSON(t, line, &r)
		rows = append(rows, r)
	}
	return rows
}

// offsets reset prints the offset stored, and says when the server clamped
// the one asked for.
func TestBinOffsetsResetSaysWhenItClamped(t *testing.T) {
	b := newBinAt(t)
	b.ok("", "topic", "create", "t")
	b.ok("a\nb\nc\n", "produce", "t")
	r := b.run("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "99")
	if r.code != 0 || !strings.Contains(r.stdout, "clamped: offset 99 is past the end of the partition; stored the high watermark, 3") ||
		!strings.Contains(r.stderr, "t/0: clamped") || strings.Contains(r.stdout, "to offset 99") {
		t.Fatalf("reset --to 99: exit %d\nstdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	rows := offsetLines(t, b.ok("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "99", "--json"))
	if len(rows) != 1 || *rows[0].Committed != 3 || rows[0].RequestedOffset == nil || *rows[0].RequestedOffset != 99 || rows[0].Clamped == "" {
		t.Fatalf("reset --to 99 --json: %+v", rows)
	}
	r = b.run("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "1")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "clamped") {
		t.Fatalf("reset --to 1: exit %d\nstdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if rows := offsetLines(t, b.ok("", "offsets", "show", "--group", "g", "t", "--json")); *rows[0].Committed != 1 {
		t.Fatalf("after reset --to 1: %+v", rows)
	}
}

// offsets show without a topic lists the partitions the group never
// committed too, so the lag is not understated.
func TestBinOffsetsShowAllTopicsIncludesUncommitted(t *testing.T) {
	b := newBinAt(t)
	b.ok("", "topic", "create", "t", "--partitions", "2")
	b.ok("a\nb\n", "produce", "t", "--partition", "0")
	b.ok("c\nd\ne\n", "produce", "t", "--partition", "1")
	b.ok("", "consume", "t", "--group", "g", "--partition", "0", "--commit")
	rows := offsetLines(t, b.ok("", "offsets", "show", "--group", "g", "--json"))
	if len(rows) != 2 || rows[0].Committed == nil || *rows[0].Committed != 2 || rows[1].Partition != 1 || rows[1].Committed != nil || rows[1].Lag != 3 {
		t.Fatalf("offsets show --group g --json: %+v", rows)
	}
	if table := b.ok("", "offsets", "show", "--group", "g"); !strings.Contains(table, "no commit") {
		t.Fatalf("offsets show --group g:\n%s", table)
	}
}

// Every command that prints a table takes --json, with stable names; the
// cluster status columns are all labeled.
func TestBinJSONOnEveryTable(t *testing.T) {
	b := newBinAt(t)
	b.ok("", "topic", "create", "t", "--partitions", "2", "--retention-records", "1000", "--segment-age", "1d")
	var topic struct {
		Name             string `json:"name"`
		Partitions       int32  `json:"partitions"`
		RetentionMs      int64  `json:"retention_ms"`
		RetentionBytes   int64  `json:"retention_bytes"`
		RetentionRecords int64  `json:"retention_records"`
		SegmentMs        int64  `json:"segment_ms"`
	}
	okJSON(t, b.ok("", "topic", "list", "--json"), &topic)
	if topic.Name != "t" || topic.Partitions != 2 || topic.RetentionMs != 7*24*3600*1000 || topic.RetentionBytes != -1 ||
		topic.RetentionRecords != 1000 || topic.SegmentMs != 24*3600*1000 {
		t.Fatalf("topic list --json: %+v", topic)
	}
	var detail struct {
		Topic struct {
			Name string `json:"name"`
		} `json:"topic"`
		RetentionRule string `json:"retention_rule"`
		Partitions    []struct {
			Partition     int32 `json:"partition"`
			HighWatermark int64 `json:"high_watermark"`
		} `json:"partitions"`
	}
	b.ok("x\n", "produce", "t", "--partition", "1")
	okJSON(t, b.ok("", "topic", "describe", "t", "--json"), &detail)
	if detail.Topic.Name != "t" || len(detail.Partitions) != 2 || detail.Partitions[1].HighWatermark != 1 || detail.RetentionRule != retentionRule {
		t.Fatalf("topic describe --json: %+v", detail)
	}
	var cs struct {
		AnsweringNode string `json:"answering_node"`
		Nodes         []struct {
			APIAddr   string `json:"api_addr"`
			KafkaID   *int32 `json:"kafka_id"`
			Alive     bool   `json:"alive"`
			Answering bool   `json:"answering"`
		} `json:"nodes"`
		Partitions []json.RawMessage `json:"partitions"`
	}
	okJSON(t, b.ok("", "cluster", "status", "--json"), &cs)
	if len(cs.Nodes) != 1 || cs.Nodes[0].APIAddr != b.addr || !cs.Nodes[0].Answering || cs.Nodes[0].KafkaID == nil || *cs.Nodes[0].KafkaID != 1 || cs.Partitions == nil {
		t.Fatalf("cluster status --json: %+v", cs)
	}
	table := b.ok("", "cluster", "status")
	if head := strings.Fields(strings.SplitN(table, "\n", 2)[0]); strings.Join(head, " ") != "NODE API RAFT KAFKA-ID KAFKA ALIVE ANSWERING" ||
		strings.Contains(table, "(answering)") {
		t.Fatalf("cluster status:\n%s", table)
	}
}

// The retention rule is one statement: topic create and alter --help,
// topic describe and the README say it in the same words.
func TestBinRetentionRuleSaidOnce(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	rule := norm(retentionRule)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(norm(string(readme)), rule) {
		t.Errorf("README.md does not state the retention rule as the CLI does:\n%s", rule)
	}
	for _, args := range [][]string{{"topic", "create", "--help"}, {"topic", "alter", "--help"}} {
		if out := okBin(t, nil, "", args...); !strings.Contains(norm(out), rule) {
			t.Errorf("logd %s lacks the retention rule:\n%s", strings.Join(args, " "), out)
		}
		if out := okBin(t, nil, "", args...); strings.Contains(out, "at most this many") {
			t.Errorf("logd %s still says \"at most\" for --retention-records", strings.Join(args, " "))
		}
	}
	b := newBinAt(t)
	b.ok("", "topic", "create", "t")
	if out := b.ok("", "topic", "describe", "t"); !strings.Contains(norm(out), rule) {
		t.Errorf("topic describe lacks the retention rule:\n%s", out)
	}
}

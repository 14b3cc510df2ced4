package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/logd/logd/client"
)

// offsets reset of a group with members says so in Kafka's terms, not the
// coordinator's "unknown member".
func TestCLIOffsetsResetLiveGroup(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok("a\nb\n", "produce", "t")
	_, g := liveMember(t, c.addr, "g", "t")
	_, _, err := c.run("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "earliest")
	if err == nil || !strings.Contains(err.Error(), "1 active member") || !strings.Contains(err.Error(), "stop its consumers first") {
		t.Fatalf("reset of a live group: %v; want its active members named", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	c.ok("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "earliest")
}

// liveMember dials addr and joins group on topic as its one member; the
// client closes with the test.
func liveMember(t *testing.T, addr, group, topic string) (*client.Client, *client.GroupConsumer) {
	t.Helper()
	cl, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := cl.NewGroupConsumer(ctx, client.GroupConsumerOptions{Group: group, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	return cl, g
}

// group describe of a group that does not exist fails, as HTTP's 404 does.
func TestCLIGroupDescribeNotFound(t *testing.T) {
	c := startCLI(t)
	_, _, err := c.run("", "group", "describe", "nosuchgroup")
	if err == nil || !strings.Contains(err.Error(), `group "nosuchgroup" not found`) {
		t.Fatalf("describe of no group: %v; want not found", err)
	}
	c.ok("", "topic", "create", "t", "--partitions", "1")
	c.ok("a\n", "produce", "t")
	c.ok("", "offsets", "reset", "--execute", "--group", "committed", "t", "--to", "earliest")
	if out := c.ok("", "group", "describe", "committed"); !strings.Contains(out, "Empty") {
		t.Fatalf("describe of a group with offsets only:\n%s", out)
	}
}

// --key-delimiter reads kcat's escapes; an empty line is an empty record,
// not the end of the produce.
func TestCLIProduceDelimiterEscapesAndEmptyLines(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "1")
	c.ok("k1\tv1\n\nk2\tv2\n", "produce", "t", "--key-delimiter", `\t`)
	c.ok("k3|v3\n", "produce", "t", "--key-delimiter", `\x7c`)
	got := parseJSONLines(t, c.ok("", "consume", "t", "--json"))
	want := []struct{ key, value string }{{"k1", "v1"}, {"", ""}, {"k2", "v2"}, {"k3", "v3"}}
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		k := ""
		if got[i].Key != nil {
			k = *got[i].Key
		}
		if k != w.key || got[i].Value != w.value {
			t.Errorf("record %d: key %q value %q, want %q %q", i, k, got[i].Value, w.key, w.value)
		}
	}
	if got[1].Key != nil {
		t.Errorf("the empty line's record has key %q, want none", *got[1].Key)
	}
	for _, bad := range []string{`\n`, `\x4`, `\xzz`} {
		if _, _, err := c.run("a\n", "produce", "t", "--key-delimiter", bad); err == nil || !strings.Contains(err.Error(), "--key-delimiter") {
			t.Errorf("--key-delimiter %s: %v, want it refused", bad, err)
		}
	}
}

// consume --from past the end says so on stderr instead of printing
// nothing silently.
func TestCLIConsumeFromPastTheEnd(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok("a\nb\nc\n", "produce", "t", "--partition", "0")
	out, errOut, err := c.run("", "consume", "t", "--from", "100", "--partition", "0")
	if err != nil || out != "" || !strings.Contains(errOut, "offset 100 of t/0 is past the end of the partition (3)") {
		t.Fatalf("consume --from 100: out %q, stderr %q, err %v; want a note on stderr", out, errOut, err)
	}
	_, errOut, _ = c.run("", "consume", "t", "--from", "2")
	if !strings.Contains(errOut, "t/1 is past the end") || strings.Contains(errOut, "t/0") {
		t.Fatalf("consume --from 2 of both partitions: stderr %q; want only t/1 named", errOut)
	}
}

// The README's tour reads partition 0 from offset 0 over HTTP and gRPC:
// it trims that partition only after those reads.
func TestREADMETourTrimsAfterItsReads(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	trim := strings.Index(s, "topic trim-prefix orders --partition 0")
	if trim < 0 {
		t.Fatal("the README's tour has no trim-prefix of orders/0")
	}
	for _, read := range []string{"partition=0&offset=0", `"partition":0,"offset":0`, "consume orders --partition 0 --from 1"} {
		if i := strings.LastIndex(s, read); i > trim {
			t.Errorf("the README reads %s after it trimmed that partition", read)
		}
	}
}

// Every flag of `logd serve --help` is in the README's configuration table.
func TestREADMEListsEveryServeFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start := strings.Index(s, "## Configuration")
	end := strings.Index(s[start:], "Every `serve` flag can also come")
	if start < 0 || end < 0 {
		t.Fatal("no configuration table in the README")
	}
	table := s[start : start+end]
	serve, _, err := newRootCmd().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" && !strings.Contains(table, "`--"+f.Name+"`") {
			t.Errorf("README's configuration table lacks --%s (%s)", f.Name, f.Usage)
		}
	})
}

// consume --tail N prints each partition's last N records.
func TestCLIConsumeTail(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok("a\nb\nc\nd\n", "produce", "t", "--partition", "0")
	c.ok("x\n", "produce", "t", "--partition", "1")
	if out := c.ok("", "consume", "t", "--partition", "0", "--tail", "2"); out != "c\nd\n" {
		t.Fatalf("--tail 2 of partition 0: %q", out)
	}
	got := parseJSONLines(t, c.ok("", "consume", "t", "--tail", "3", "--json"))
	var vals []string
	for _, r := range got {
		vals = append(vals, fmt.Sprintf("%d:%s", r.Partition, r.Value))
	}
	slices.Sort(vals)
	if strings.Join(vals, " ") != "0:b 0:c 0:d 1:x" {
		t.Fatalf("--tail 3 of both partitions: %v", vals)
	}
	if _, _, err := c.run("", "consume", "t", "--tail", "2", "--from", "earliest"); err == nil {
		t.Fatal("--tail with --from was accepted")
	}
}

// produce --header adds headers to every record; --print-offsets prints
// where each record went.
func TestCLIProduceHeadersAndOffsets(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	out := c.ok("a\nb\n", "produce", "t", "--partition", "1", "--header", "src=cli", "--header", "v=2", "--print-offsets")
	if out != "t/1@0\nt/1@1\n" {
		t.Fatalf("--print-offsets: %q", out)
	}
	if out := c.ok("", "consume", "t", "--partition", "1", "--format", `%s %h`); out != "a src=cli,v=2\nb src=cli,v=2\n" {
		t.Fatalf("consumed with headers: %q", out)
	}
	if _, _, err := c.run("a\n", "produce", "t", "--header", "novalue"); err == nil {
		t.Fatal("--header without = was accepted")
	}
}

// offsets reset is a dry run unless --execute, as kafka-consumer-groups;
// --shift-by moves each committed offset; --all-topics takes every topic
// the group committed in.
func TestCLIOffsetsResetDryRunShiftAllTopics(t *testing.T) {
	c := startCLI(t)
	for _, topic := range []string{"a", "b"} {
		c.ok("", "topic", "create", topic, "--partitions", "1")
		c.ok("1\n2\n3\n4\n5\n", "produce", topic)
		c.ok("", "offsets", "reset", "--execute", "--group", "g", topic, "--to", "4")
	}
	committed := func(topic string) int64 {
		t.Helper()
		rows := parseOffsetRows(t, c.ok("", "offsets", "show", "--group", "g", topic, "--json"))
		return *rows[0].Committed
	}
	out := c.ok("", "offsets", "reset", "--group", "g", "a", "--to", "earliest")
	if !strings.Contains(out, "dry run") || committed("a") != 4 {
		t.Fatalf("reset without --execute stored (committed %d) or did not say dry run:\n%s", committed("a"), out)
	}
	rows := parseOffsetRows(t, c.ok("", "offsets", "reset", "--group", "g", "a", "--shift-by", "-3", "--json"))
	if len(rows) != 1 || *rows[0].Committed != 1 || !rows[0].DryRun || committed("a") != 4 {
		t.Fatalf("dry run of --shift-by -3: %+v, committed %d", rows, committed("a"))
	}
	c.ok("", "offsets", "reset", "--group", "g", "--all-topics", "--shift-by", "-3", "--execute")
	if committed("a") != 1 || committed("b") != 1 {
		t.Fatalf("after --all-topics --shift-by -3 --execute: a %d, b %d; want 1 and 1", committed("a"), committed("b"))
	}
	_, errOut, err := c.run("", "offsets", "reset", "--group", "g", "a", "--shift-by", "10", "--execute")
	if err != nil || committed("a") != 5 || !strings.Contains(errOut, "clamped") {
		t.Fatalf("--shift-by past the end: %v, committed %d, stderr %q; want the high watermark and a note", err, committed("a"), errOut)
	}
}

func parseOffsetRows(t *testing.T, out string) []offsetJSON {
	t.Helper()
	var rows []offsetJSON
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r offsetJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		rows = append(rows, r)
	}
	return rows
}

// consume --until stops each partition before the position.
func TestCLIConsumeUntil(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "1")
	c.ok("a\nb\nc\nd\n", "produce", "t")
	if out := c.ok("", "consume", "t", "--from", "1", "--until", "3"); out != "b\nc\n" {
		t.Fatalf("--from 1 --until 3: %q", out)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if out := c.ok("", "consume", "t", "--until", future); out != "a\nb\nc\nd\n" {
		t.Fatalf("--until an hour from now: %q", out)
	}
	if _, _, err := c.run("", "consume", "t", "--until", "2", "--follow"); err == nil {
		t.Fatal("--until with --follow was accepted")
	}
}

// group delete removes a group without members and its offsets, refuses a
// group with members (naming how many), and says when there is no group.
func TestCLIGroupDelete(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok("a\nb\n", "produce", "t")
	c.ok("", "offsets", "reset", "--execute", "--group", "g", "t", "--to", "latest")
	cl, g := liveMember(t, c.addr, "g", "t")
	_, _, err := c.run("", "group", "delete", "g")
	if err == nil || !strings.Contains(err.Error(), "1 active member") || !strings.Contains(err.Error(), "stop its consumers first") {
		t.Fatalf("delete of a live group: %v; want its active members named", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("", "group", "delete", "g"); !strings.Contains(out, "deleted group g") {
		t.Fatalf("delete: %q", out)
	}
	if offs, err := cl.Admin().FetchOffsets(context.Background(), "g", ""); err != nil || len(offs) != 0 {
		t.Fatalf("offsets after delete: %v, %v", offs, err)
	}
	_, _, err = c.run("", "group", "delete", "g")
	if err == nil || !strings.Contains(err.Error(), `group "g" not found`) {
		t.Fatalf("delete of a deleted group: %v; want not found", err)
	}
}

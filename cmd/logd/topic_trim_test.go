package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestCLITopicTrimPrefix trims one partition to an offset, then every
// partition to its end; bad input and a refused trim are one line.
func TestCLITopicTrimPrefix(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t", "--partitions", "2")
	c.ok(lines(10, func(i int) string { return fmt.Sprint(i) }), "produce", "t", "--partition", "0")
	c.ok(lines(5, func(i int) string { return fmt.Sprint(i) }), "produce", "t", "--partition", "1")

	out := c.ok("", "topic", "trim-prefix", "t", "--partition", "0", "--offset", "4")
	if rows := strings.Split(strings.TrimSpace(out), "\n"); len(rows) != 2 || strings.Join(strings.Fields(rows[1]), " ") != "t 0 4" {
		t.Fatalf("trim partition 0 to 4: %q", out)
	}
	if out := c.ok("", "consume", "t", "--partition", "0", "--from", "earliest", "--count", "1"); out != "4\n" {
		t.Fatalf("first record after the trim: %q, want 4", out)
	}
	if out := c.ok("", "consume", "t", "--partition", "1", "--from", "earliest", "--count", "1"); out != "0\n" {
		t.Fatalf("partition 1 after trimming 0: %q, want 0", out)
	}
	out = c.ok("", "topic", "trim-prefix", "t", "--offset", "end")
	if got := strings.Join(strings.Fields(out), " "); got != "TOPIC PARTITION LOG-START t 0 10 t 1 5" {
		t.Fatalf("trim every partition to its end: %q", out)
	}
	t.Logf("trim-prefix --offset end:\n%s", out)
	out = c.ok("", "topic", "trim-prefix", "t", "--partition", "1", "--offset", "2", "--json")
	if out != `{"topic":"t","partition":1,"log_start_offset":5}`+"\n" {
		t.Fatalf("--json, an offset below the start: %q", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"t"}, "--offset is required"},
		{[]string{"t", "--offset", "abc"}, `--offset "abc"`},
		{[]string{"t", "--offset", "-2"}, `--offset "-2"`},
		{[]string{"t", "--offset", "1", "--partition", "-1"}, "--partition -1"},
		{[]string{"t", "--offset", "99", "--partition", "1"}, "99"},
		{[]string{"t", "--offset", "1", "--partition", "2"}, "2"},
		{[]string{"missing", "--offset", "1"}, "missing"},
		{[]string{"--offset", "1"}, "TOPIC"},
	} {
		_, _, err := c.run("", append([]string{"topic", "trim-prefix"}, tc.args...)...)
		if err == nil {
			t.Errorf("logd topic trim-prefix %v: no error", tc.args)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "rpc error") {
			t.Errorf("logd topic trim-prefix %v: %q, want one line mentioning %q", tc.args, msg, tc.want)
		}
		t.Logf("logd topic trim-prefix %v: %s", tc.args, msg)
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

// rejectAll has a share group member reject every record of topic: each
// is appended to topic.dlq.
func rejectAll(t *testing.T, addr, topic string, produce func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.ShareConsumer("g", topic)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if _, err := w.Poll(ctx, 10, 10*time.Millisecond); err != nil { // the group starts at the end: now
		t.Fatal(err)
	}
	produce()
	for n := 0; n < 3 && ctx.Err() == nil; {
		recs, err := w.Poll(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Reject(r); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// logd dlq list prints the dead letters with their origin, filtered by
// offset range and header; purge deletes them; bad input is one line.
func TestCLIDLQListPurge(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "jobs")
	rejectAll(t, c.addr, "jobs", func() { c.ok("x\ny\nz\n", "produce", "jobs") })
	// The dead letters are appended by the fetch or acknowledgement that
	// made them: the flush's.
	out := c.ok("", "dlq", "list", "jobs.dlq")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 4 || strings.Join(strings.Fields(rows[1]), " ") != `0 0 jobs/0@0 g 1 "" "x"` {
		t.Fatalf("list:\n%s", out)
	}
	t.Logf("dlq list:\n%s", out)
	if out := c.ok("", "dlq", "list", "jobs.dlq", "--from", "1", "--to", "2"); !strings.Contains(out, `"y"`) || strings.Count(out, "\n") != 2 {
		t.Fatalf("list --from 1 --to 2:\n%s", out)
	}
	if out := c.ok("", "dlq", "list", "jobs.dlq", "--header", "logd.dlq.offset=2"); !strings.Contains(out, `"z"`) || strings.Count(out, "\n") != 2 {
		t.Fatalf("list --header:\n%s", out)
	}
	c.ok("", "dlq", "purge", "jobs.dlq", "--offset", "2")
	if out := c.ok("", "dlq", "list", "jobs.dlq"); strings.Count(out, "\n") != 2 || !strings.Contains(out, `"z"`) {
		t.Fatalf("list after purge to 2:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "missing.dlq"}, "missing.dlq"},
		{[]string{"list", "jobs.dlq", "--from", "5", "--to", "2"}, "empty range"},
		{[]string{"list", "jobs.dlq", "--from", "-1"}, "--from -1"},
		{[]string{"list", "jobs.dlq", "--header", "nokey"}, `--header "nokey"`},
		{[]string{"purge", "jobs.dlq"}, "--offset is required"},
		{[]string{"purge", "missing.dlq", "--offset", "1"}, "missing.dlq"},
	} {
		_, _, err := c.run("", append([]string{"dlq"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("logd dlq %v: %v, want one line mentioning %q", tc.args, err, tc.want)
		}
	}
}

// logd dlq redrive appends the dead letters back to their source without
// the dlq headers, and a second run appends nothing again (the group's
// cursor); a record that is not a dead letter is refused.
func TestCLIDLQRedrive(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "jobs")
	rejectAll(t, c.addr, "jobs", func() { c.ok("x\ny\nz\n", "produce", "jobs") })
	if out := c.ok("", "dlq", "redrive", "jobs.dlq", "--header", "logd.dlq.offset=1"); out != "redrove 1 records\n" {
		t.Fatalf("redrive --header: %q", out)
	}
	if out := c.ok("", "dlq", "redrive", "jobs.dlq", "--group", "all"); out != "redrove 3 records\n" {
		t.Fatalf("redrive all: %q", out)
	}
	if out := c.ok("", "dlq", "redrive", "jobs.dlq", "--group", "all"); out != "redrove 0 records\n" {
		t.Fatalf("redrive again: %q", out)
	}
	out := c.ok("", "consume", "jobs", "--from", "earliest", "--json")
	if got := strings.Split(strings.TrimSpace(out), "\n"); len(got) != 7 || strings.Contains(out, "logd.dlq") ||
		!strings.Contains(got[3], `"y"`) || !strings.Contains(got[6], `"z"`) {
		t.Fatalf("jobs after the redrives:\n%s", out)
	}
	c.ok("", "topic", "create", "plain")
	c.ok("v\n", "produce", "plain")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "plain"}, "not a dead letter"},
		{[]string{"redrive", "missing.dlq"}, "missing.dlq"},
		{[]string{"redrive", "jobs.dlq", "--from", "3", "--to", "3"}, "empty range"},
	} {
		_, _, err := c.run("", append([]string{"dlq"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("logd dlq %v: %v, want one line mentioning %q", tc.args, err, tc.want)
		}
	}
}

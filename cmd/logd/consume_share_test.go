package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// consume --share prints and accepts: each record goes to one run; a
// failed output with --release-on-error gives the records back at once.
func TestCLIConsumeShare(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "t")
	if out := c.ok("", "consume", "t", "--share", "w"); out != "" { // the group starts at the end
		t.Fatalf("empty share read: %q", out)
	}
	c.ok("a\nb\nc\n", "produce", "t")
	if out := c.ok("", "consume", "t", "--share", "w", "--count", "2"); out != "a\nb\n" {
		t.Fatalf("--count 2: %q", out)
	}
	if out := c.ok("", "consume", "t", "--share", "w"); out != "c\n" {
		t.Fatalf("the rest: %q", out)
	}
	c.ok("d\n", "produce", "t")
	root := newRootCmd()
	root.SetOut(failingWriter{})
	root.SetErr(new(bytes.Buffer))
	root.SetArgs([]string{"consume", "t", "--share", "w", "--release-on-error", "--server", c.addr})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("failed output: %v", err)
	}
	if out := c.ok("", "consume", "t", "--share", "w"); out != "d\n" {
		t.Fatalf("after a failed output with --release-on-error: %q, want d again", out)
	}
	if _, _, err := c.run("", "consume", "t", "--share", "w", "--from", "earliest"); err == nil || !strings.Contains(err.Error(), "--share") {
		t.Fatalf("--share --from: %v", err)
	}
}

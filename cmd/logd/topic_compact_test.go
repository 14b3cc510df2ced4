package main

import (
	"strings"
	"testing"
)

// topic create and alter set the cleanup policy and compaction settings;
// describe and list --json show them; a bad policy is refused before any
// call.
func TestCLITopicCleanupPolicy(t *testing.T) {
	c := startCLI(t)
	out := c.ok("", "topic", "create", "kv", "--cleanup-policy", "compact", "--delete-retention", "1h", "--min-compaction-lag", "1m")
	if !strings.Contains(out, "cleanup compact, tombstones kept 1h, min lag 1m") {
		t.Fatalf("create: %q", out)
	}
	out = c.ok("", "topic", "alter", "kv", "--cleanup-policy", "delete,compact")
	if !strings.Contains(out, "cleanup compact,delete, tombstones kept 1h") {
		t.Fatalf("alter: %q", out)
	}
	if out := c.ok("", "topic", "list", "--json"); !strings.Contains(out, `"cleanup_policy":"compact,delete"`) {
		t.Fatalf("list --json: %q", out)
	}
	if _, _, err := c.run("", "topic", "alter", "kv", "--cleanup-policy", "shred"); err == nil || !strings.Contains(err.Error(), "--cleanup-policy") {
		t.Fatalf("bad policy: %v", err)
	}
	if _, _, err := c.run("", "topic", "alter", "kv", "--min-cleanable-dirty-ratio", "2"); err == nil || !strings.Contains(err.Error(), "dirty-ratio") {
		t.Fatalf("bad ratio: %v", err)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// logd kv get, put, del and list over a compacted topic, with a
// compare-and-set by offset, against a real node.
func TestCLIKeyValue(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "cfg", "--partitions", "2", "--cleanup-policy", "compact")
	c.ok("", "topic", "create", "plain")
	out := c.ok("", "kv", "put", "cfg", "app/a", "one")
	var part int32
	var off int64
	if _, err := fmt.Sscanf(out, "partition %d offset %d\n", &part, &off); err != nil {
		t.Fatalf("put: %q: %v", out, err)
	}
	if out := c.ok("", "kv", "get", "cfg", "app/a"); out != "one\n" {
		t.Fatalf("get: %q", out)
	}
	var e kvEntryJSON
	if err := json.Unmarshal([]byte(c.ok("", "kv", "get", "cfg", "app/a", "--json")), &e); err != nil || e.Offset != off || e.Partition != part || *e.Value != "one" {
		t.Fatalf("get --json: %+v %v, want offset %d partition %d", e, err, off, part)
	}
	_, _, err := c.run("", "kv", "put", "cfg", "app/a", "two", "--if-offset", fmt.Sprint(off+1))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the key's latest offset is %d, not %d", off, off+1)) {
		t.Fatalf("put --if-offset of another offset: %v", err)
	}
	c.ok("", "kv", "put", "cfg", "app/a", "two", "--if-offset", fmt.Sprint(off))
	if _, _, err := c.run("", "kv", "put", "cfg", "app/a", "three", "--if-absent"); err == nil {
		t.Fatal("put --if-absent of a key with a value succeeded")
	}
	c.ok("from stdin", "kv", "put", "cfg", "app/b", "-")
	c.ok("", "kv", "put", "cfg", "other", "x")
	out = c.ok("", "kv", "list", "cfg", "--prefix", "app/")
	if !strings.HasPrefix(out, "app/a\ttwo\t@") || !strings.Contains(out, "\napp/b\tfrom stdin\t@") || strings.Contains(out, "other") {
		t.Fatalf("list --prefix app/: %q", out)
	}
	c.ok("", "kv", "del", "cfg", "app/a")
	if _, _, err := c.run("", "kv", "get", "cfg", "app/a"); err == nil || !strings.Contains(err.Error(), "key not found") {
		t.Fatalf("get after del: %v", err)
	}
	if _, _, err := c.run("", "kv", "get", "plain", "k"); err == nil || !strings.Contains(err.Error(), "not compacted") {
		t.Fatalf("get on a delete topic: %v", err)
	}
}

// logd kv watch prints the puts and deletes of the keys with its prefix
// as they happen.
func TestCLIKeyValueWatch(t *testing.T) {
	c := startCLI(t)
	c.ok("", "topic", "create", "cfg", "--cleanup-policy", "compact")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"kv", "watch", "cfg", "--prefix", "app/", "--server", c.addr})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		for s := bufio.NewScanner(pr); s.Scan(); {
			lines <- s.Text()
		}
	}()
	// The watch starts at the end of the log once it has looked it up:
	// probe until it prints a put.
	for seen := false; !seen; {
		c.ok("", "kv", "put", "cfg", "app/probe", "p")
		select {
		case <-lines:
			seen = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.ok("", "kv", "put", "cfg", "other", "o")
	c.ok("", "kv", "put", "cfg", "app/k", "v1")
	c.ok("", "kv", "del", "cfg", "app/k")
	var seen []string
	for len(seen) < 2 {
		l, ok := <-lines
		switch {
		case !ok:
			t.Fatalf("watch ended: %v", <-done)
		case strings.HasPrefix(l, "app/probe"):
		default:
			seen = append(seen, strings.SplitN(l, "\t@", 2)[0])
		}
	}
	if strings.Join(seen, "|") != "app/k\tv1|app/k\t(deleted)" {
		t.Fatalf("watch printed %q", seen)
	}
	cancel()
	pr.Close()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v, want nil on interrupt", err)
	}
}

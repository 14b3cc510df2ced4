package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// One logger: with --log-format json every line a node writes, Raft's
// included, is a JSON object; a start, a restart and a clean SIGTERM of a
// cluster node write nothing at WARN or ERROR.
func TestBinLogFormatJSONAndRoutineLevels(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--addr", "127.0.0.1:0", "--http-addr", "", "--kafka-addr", "127.0.0.1:0", "--node-id", "n1",
		"--raft-addr", "127.0.0.1:0", "--bootstrap", "--log-format", "json", "--log-level", "debug"}
	var logs strings.Builder
	for run := range 2 { // the second run is a restart from the same directory
		n := startBin(t, nil, args...)
		if run == 0 {
			okBin(t, nil, "", "topic", "create", "t", "--partitions", "2", "--server", n.addr)
		}
		// Until topic create waits for the partitions' leaders (issue 15,
		// item 1), a produce right after it can find no partition yet.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			r := runBin(t, nil, "a\nb\n", "produce", "t", "--server", n.addr)
			if r.code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("produce: %s", r.stderr)
			}
		}
		n.signal(syscall.SIGTERM)
		logs.WriteString(n.stderr())
	}
	raftLines := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Level, Msg, Component string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if strings.HasPrefix(rec.Component, "raft") {
			raftLines++
		}
		if rec.Level == "WARN" || rec.Level == "ERROR" {
			t.Errorf("routine start, restart or SIGTERM logged %s: %s", rec.Level, line)
		}
	}
	if raftLines == 0 {
		t.Fatalf("no Raft line in the node's log at --log-level debug:\n%s", logs.String())
	}
	failBin(t, nil, "", "--log-format", "serve", "--log-format", "xml")
}

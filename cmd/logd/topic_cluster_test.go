package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `topic create --timeout D` lets the cluster wait for the new partitions'
// leaders until just before D, and no longer: a partition whose only
// replica is down is reported within a 5 s --timeout, where without it
// the client gives the server 10 s beyond its 10 s call timeout.
func TestBinTopicCreateWaitsForItsTimeout(t *testing.T) {
	nodes := startCluster(t)
	nodes[2].signal(syscall.SIGKILL)
	servers := "--server=" + nodes[0].addr + "," + nodes[1].addr
	start := time.Now()
	line := failBin(t, nil, "", "no leader after", "topic", "create", "stranded", "--partitions", "3", "--replicas", "1", "--timeout", "5s", servers)
	took := time.Since(start)
	t.Logf("%s after %v", line, took)
	if took > 12*time.Second {
		t.Fatalf("answered after %v with --timeout 5s: %s", took, line)
	}
	if !strings.Contains(line, "[n3]") {
		t.Fatalf("the answer does not name the partition's replica on the node that is down: %s", line)
	}

	// `produce --timeout D` gives each record D to be acknowledged, not
	// the producer's default 2 minutes.
	m := regexp.MustCompile(`partition (\d+) has no leader`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the answer names no partition: %s", line)
	}
	start = time.Now()
	line = failBin(t, nil, "x\n", "delivery timeout (3s)", "produce", "stranded", "--partition", m[1], "--timeout", "3s", servers)
	took = time.Since(start)
	t.Logf("%s after %v", line, took)
	if took > 15*time.Second {
		t.Fatalf("produce --timeout 3s answered after %v: %s", took, line)
	}
}

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
	// the producer's default 2 minutes. The partition is the one whose
	// replica is on the stopped node: on a loaded machine a live node's
	// partition may be named too, not elected yet when the create gave up.
	part := strandedPartition(line, "n3")
	if part == "" {
		t.Fatalf("the answer names no partition whose replica is n3: %s", line)
	}
	start = time.Now()
	line = failBin(t, nil, "x\n", "delivery timeout (3s)", "produce", "stranded", "--partition", part, "--timeout", "3s", servers)
	took = time.Since(start)
	t.Logf("%s after %v", line, took)
	if took > 15*time.Second {
		t.Fatalf("produce --timeout 3s answered after %v: %s", took, line)
	}
}

// strandedPartition is the partition that an awaitUsable error names with
// replicas [node]: "partition P has no leader ... replicas [node]" or
// "partitions P [a], Q [node] have no leader".
func strandedPartition(line, node string) string {
	if m := regexp.MustCompile(`partition (\d+) has no leader .*replicas \[` + node + `\]`).FindStringSubmatch(line); m != nil {
		return m[1]
	}
	for _, m := range regexp.MustCompile(`(\d+) \[([^\]]*)\]`).FindAllStringSubmatch(line, -1) {
		if m[2] == node {
			return m[1]
		}
	}
	return ""
}

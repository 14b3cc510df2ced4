package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/logd/logd/internal/node/nodetest"
)

// topic alter --partitions grows a topic through the real binary: it
// states that keys move and asks for --yes, refuses counts that do not
// grow, and the new partitions take records at once.
func TestBinTopicAlterPartitions(t *testing.T) {
	b := newBinAt(t)
	b.ok("", "topic", "create", "t", "--partitions", "2")
	b.ok("v1\n", "produce", "t", "--key", "k1")

	line := failBin(t, nil, "", "--yes", "topic", "alter", "t", "--partitions", "4", "--server", b.addr)
	if !strings.Contains(line, "a key's new records may go to another partition") {
		t.Errorf("without --yes the CLI should say that keys move: %q", line)
	}
	failBin(t, nil, "", "has 2 partitions", "topic", "alter", "t", "--partitions", "2", "--yes", "--server", b.addr)
	failBin(t, nil, "", "has 2 partitions", "topic", "alter", "t", "--partitions", "1", "--yes", "--server", b.addr)
	failBin(t, nil, "", "--partitions is the new total count", "topic", "alter", "t", "--partitions", "0", "--yes", "--server", b.addr)
	failBin(t, nil, "", "not found", "topic", "alter", "nope", "--partitions", "3", "--yes", "--server", b.addr)

	out := b.ok("", "topic", "alter", "t", "--partitions", "4", "--yes")
	if !strings.Contains(out, "topic t now has 4 partitions") {
		t.Fatalf("alter --partitions 4 printed %q", out)
	}
	b.ok("new\n", "produce", "t", "--partition", "3")
	var d struct {
		Topic struct {
			Partitions int32 `json:"partitions"`
		} `json:"topic"`
		Partitions []struct {
			Partition     int32 `json:"partition"`
			HighWatermark int64 `json:"high_watermark"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(b.ok("", "topic", "describe", "t", "--json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.Topic.Partitions != 4 || len(d.Partitions) != 4 || d.Partitions[3].HighWatermark != 1 {
		t.Fatalf("describe after the add: %+v", d)
	}
	if got := strings.TrimSpace(b.ok("", "consume", "t", "--partition", "3", "--from", "earliest", "--count", "1")); got != "new" {
		t.Fatalf("consume partition 3: %q, want new", got)
	}
}

// cluster wait --nodes N returns once the cluster lists N nodes, and fails
// with one clear line when it never does.
func TestBinClusterWait(t *testing.T) {
	cl := nodetest.NewCluster(t, 3)
	servers := strings.Join(cl.Addrs(), ",")
	out := okBin(t, nil, "", "cluster", "wait", "--nodes", "3", "--server", servers)
	if !strings.Contains(out, "the cluster has 3 nodes: n1, n2, n3") {
		t.Fatalf("cluster wait printed %q", out)
	}
	failBin(t, nil, "", "lists 3 nodes after 1s, not 4", "cluster", "wait", "--nodes", "4", "--timeout", "1s", "--server", servers)
	failBin(t, nil, "", "--nodes must be at least 1", "cluster", "wait", "--server", servers)
}

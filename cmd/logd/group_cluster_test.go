package main

// A consumer group on a three-node cluster of real processes whose
// coordinator (the metadata leader) is killed with kill -9.

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
)

// startCluster starts three `logd serve` processes in cluster mode and
// waits until every node is alive.
func startCluster(t *testing.T) []*binNode {
	t.Helper()
	raft := func() string {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	common := []string{"--addr", "127.0.0.1:0", "--http-addr", ""}
	n1 := startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n1", "--raft-addr", raft(), "--bootstrap")...)
	nodes := []*binNode{n1}
	for _, id := range []string{"n2", "n3"} {
		nodes = append(nodes, startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", id, "--raft-addr", raft(), "--join", n1.addr)...))
	}
	c, err := client.Dial(n1.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, 60*time.Second, "three nodes alive", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Admin().ClusterStatus(ctx)
		alive := 0
		for _, n := range st.Nodes {
			if n.Alive {
				alive++
			}
		}
		return err == nil && alive == 3
	})
	return nodes
}

func TestBinConsumeGroupCoordinatorKilled(t *testing.T) {
	nodes := startCluster(t)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.addr)
	}
	all := []string{"--server", strings.Join(addrs, ",")}
	okBin(t, nil, "", append([]string{"topic", "create", "orders", "--partitions", "4"}, all...)...)
	args := append([]string{"orders", "--group", "billing", "--follow", "--commit", "--from", "earliest", "--session-timeout", "6s"}, all...)
	a, b := startConsume(t, args...), startConsume(t, args...)
	describe := func(addrs []string) groupJSON { return describeJSON(t, strings.Join(addrs, ","), "billing") }
	eventually(t, 60*time.Second, "two consumers share the 4 partitions", func() bool { return stableWith(describe(addrs), 2, 4) })
	produceRange(t, all, 0, 200)
	eventually(t, 30*time.Second, "every record printed", func() bool { return printedAll(0, 200, a, b) })
	time.Sleep(500 * time.Millisecond)
	printedOnce(t, 0, 200, a, b)
	eventually(t, 20*time.Second, "the group commits every partition to its end", func() bool { return committedToEnd(describe(addrs)) })
	before := describe(addrs)

	// kill -9 the coordinator's node: the members find the new metadata
	// leader's coordinator and join again there.
	var survivors []string
	killed := false
	for _, n := range nodes {
		if n.addr == before.Coordinator {
			n.signal(syscall.SIGKILL)
			killed = true
			continue
		}
		survivors = append(survivors, n.addr)
	}
	if !killed {
		t.Fatalf("the coordinator %q is none of the nodes %v", before.Coordinator, addrs)
	}
	killedAt := time.Now()
	var lastErr string
	eventually(t, 60*time.Second, "the members join the new coordinator", func() bool {
		// Describe fails while the cluster elects a new metadata leader.
		r := runBin(t, nil, "", "group", "describe", "billing", "--json", "--server", strings.Join(survivors, ","), "--timeout", "5s")
		var g groupJSON
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &g) != nil {
			lastErr = r.stderr
			return false
		}
		return g.Coordinator != before.Coordinator && stableWith(g, 2, 4)
	})
	t.Logf("the group was Stable at a new coordinator %s after the kill (last describe error meanwhile: %q)",
		time.Since(killedAt).Round(100*time.Millisecond), strings.TrimSpace(lastErr))
	after := describe(survivors)
	for i, p := range after.Partitions {
		if was := before.Partitions[i].Committed; p.Committed == nil || *p.Committed < *was {
			t.Fatalf("partition %d: committed offset %v after the failover, %d before: a commit was lost", p.Partition, p.Committed, *was)
		}
	}
	srv := []string{"--server", strings.Join(survivors, ",")}
	produceRange(t, srv, 200, 300)
	eventually(t, 30*time.Second, "the members print every record produced after the failover", func() bool { return printedAll(200, 300, a, b) })
	eventually(t, 30*time.Second, "the group commits every partition to its end", func() bool { return committedToEnd(describe(survivors)) })
	for _, p := range []*consumeProc{a, b} {
		select {
		case err := <-p.exited:
			t.Fatalf("a member exited during the failover: %v\n%s", err, p.stderr.String())
		default:
		}
	}
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
)

// freeAddr is a 127.0.0.1 address nothing listens on (for a node that must
// keep its addresses across restarts).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

type clusterNode struct {
	id, dir, api, raft string
	join               string // "" for the bootstrap node
	n                  *node
}

func (c *clusterNode) start(t *testing.T) {
	t.Helper()
	args := []string{"--addr", c.api, "--node-id", c.id, "--raft-addr", c.raft}
	if c.join == "" {
		args = append(args, "--bootstrap")
	} else {
		args = append(args, "--join", c.join)
	}
	c.n = startNode(t, c.dir, args...)
}

// cli runs the logd CLI against the cluster and returns its stdout.
func cli(t *testing.T, servers string, args ...string) string {
	t.Helper()
	cmd := exec.Command(logdBinary(t), append(args, "--server", servers)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("logd %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// TestClusterKill9AnyNode: a 3-node cluster started from the CLI keeps every
// acknowledged record (acks=all, the default in a cluster), in per-key
// order, through kill -9 of each node in turn while producers run.
func TestClusterKill9AnyNode(t *testing.T) {
	dir := t.TempDir()
	var nodes []*clusterNode
	for i := range 3 {
		c := &clusterNode{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), api: freeAddr(t), raft: freeAddr(t)}
		if i > 0 {
			c.join = nodes[0].api
		}
		nodes = append(nodes, c)
		c.start(t)
	}
	var seeds []string
	for _, c := range nodes {
		seeds = append(seeds, c.api)
	}
	servers := strings.Join(seeds, ",")
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(cli(t, servers, "cluster", "status"), "true") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not form:\n%s", cli(t, servers, "cluster", "status"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	cli(t, servers, "topic", "create", "events", "--partitions", "3")

	c, err := client.Dial(servers)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type acked struct {
		key, value string
		partition  int32
		offset     int64
	}
	var mu sync.Mutex
	var acks []acked
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := c.NewProducer(client.ProducerOptions{DeliveryTimeout: 60 * time.Second})
			defer p.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%d", w, i%5)
				val := fmt.Sprintf("%s:%d", key, i/5)
				ack, err := p.Produce(context.Background(), client.Record{Topic: "events", Key: []byte(key), Value: []byte(val)}).Get(context.Background())
				if err != nil {
					t.Errorf("produce %s: %v", val, err)
					return
				}
				mu.Lock()
				acks = append(acks, acked{key, val, ack.Partition, ack.Offset})
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	for _, victim := range nodes {
		before := count()
		time.Sleep(time.Second)
		victim.n.kill()
		time.Sleep(3 * time.Second)
		victim.start(t)
		time.Sleep(2 * time.Second)
		if count() == before {
			t.Fatalf("no record acknowledged while %s was killed and restarted", victim.id)
		}
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Everything acknowledged is there, once, at its offset, in key order.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "events", Start: client.Earliest()})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	stored := map[int32]map[int64]string{}
	seen := map[string]bool{}
	total := 0
	hw := map[int32]int64{}
	for {
		recs, err := cons.Poll(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("consume after %d records: %v", total, err)
		}
		for _, r := range recs {
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("%s stored twice", v)
			}
			seen[v] = true
			if stored[r.Partition] == nil {
				stored[r.Partition] = map[int64]string{}
			}
			stored[r.Partition][r.Offset] = v
			hw[r.Partition] = max(hw[r.Partition], r.Offset+1)
			total++
		}
	}
	last := map[string]int{}
	for p := int32(0); p < 3; p++ {
		for off := int64(0); off < hw[p]; off++ {
			v, ok := stored[p][off]
			if !ok {
				t.Fatalf("partition %d: no record at offset %d below %d", p, off, hw[p])
			}
			key, seqs, _ := strings.Cut(v, ":")
			var seq int
			fmt.Sscanf(seqs, "%d", &seq)
			if prev, ok := last[key]; ok && seq <= prev {
				t.Fatalf("key %s: %d after %d", key, seq, prev)
			}
			last[key] = seq
		}
	}
	for _, a := range acks {
		if got := stored[a.partition][a.offset]; got != a.value {
			t.Fatalf("acknowledged %s at %d/%d, found %q", a.value, a.partition, a.offset, got)
		}
	}
	t.Logf("%d acknowledged records, %d stored, through kill -9 of each of 3 nodes", len(acks), total)
	for _, n := range nodes {
		n.n.stop()
	}
}

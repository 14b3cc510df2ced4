package replication_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication/clustertest"
)

// Producers keep appending while the leader is killed and, later, a
// follower is cut off behind a slow link: nothing acknowledged is lost,
// per-key order holds, and every replica ends byte-identical.
func TestLeaderKilledUnderLoad(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}, Log: func(o *log.Options) { o.SegmentBytes = 8192 }})
	ps := make([]*producer, 4)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ps {
		ps[i] = &producer{key: fmt.Sprintf("k%d", i), acked: map[int]int64{}}
		wg.Add(1)
		go func() { defer wg.Done(); ps[i].run(t, c, stop) }()
	}
	time.Sleep(time.Second)
	old := c.Leader(group)
	c.Kill(old.ID)
	time.Sleep(2 * time.Second)
	c.Restart(old.ID)

	// Cut a follower off, slow another link, keep producing, heal.
	leader := c.Leader(group)
	var f *clustertest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			f = n
		}
	}
	c.Net.Isolate(f.ID, c.IDs()...)
	for _, n := range c.Nodes() {
		if n != leader && n != f {
			c.Net.SetDelay(leader.ID, n.ID, 5*time.Millisecond)
		}
	}
	time.Sleep(2 * time.Second)
	c.Net.Heal()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	c.WaitConverged(group, 60*time.Second)
	total := 0
	for _, p := range ps {
		total += len(p.acked)
		for _, n := range c.Nodes() {
			p.check(t, n)
		}
	}
	if total < 20 {
		t.Fatalf("only %d appends acknowledged", total)
	}
	t.Logf("%d appends acknowledged of %d sent", total, ps[0].sent+ps[1].sent+ps[2].sent+ps[3].sent)
}

// Each record is written to disk once per replica: the log is Raft's log
// store. Bytes the logs write (segments and indexes), over the bytes of
// the batches produced times the replicas, stays at most 1.1 (issue 5's
// goal). The stable store writes only at elections.
func TestDiskBytesPerProducedByte(t *testing.T) {
	var written atomic.Int64
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}, Log: func(o *log.Options) {
		o.Hooks.Written = func(n int) { written.Add(int64(n)) }
	}})
	value := bytes.Repeat([]byte("v"), 100)
	var produced int64
	start := written.Load()
	for i := range 200 {
		recs := make([]batch.Record, 10)
		for j := range recs {
			recs[j] = batch.Record{Timestamp: int64(i), Key: fmt.Appendf(nil, "k%d", j), Value: value}
		}
		b := batch.Encode(nil, 0, batch.NoProducer, recs)
		produced += int64(len(b))
		if _, err := c.Append(group, b, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitConverged(group, 30*time.Second)
	ratio := float64(written.Load()-start) / float64(produced*int64(len(c.Nodes())))
	t.Logf("produced %d bytes in 200 batches of 10 records; logs wrote %d bytes on %d replicas: %.3f per produced byte per replica",
		produced, written.Load()-start, len(c.Nodes()), ratio)
	if ratio > 1.1 {
		t.Fatalf("%.3f bytes written per produced byte per replica, want at most 1.1", ratio)
	}
}

// Seeded chaos: producers append while links are cut, delayed and healed
// and nodes are killed and restarted at random (never more than one down).
// Then the cluster heals and every replica must hold every acknowledged
// record at its acknowledged offset, in per-key order, byte-identical.
// LOGD_CHAOS_SECONDS sets how long faults are injected (default 6);
// LOGD_CHAOS_SEED replays a run. (Before appends had deadlines, a producer
// could wait forever on a killed leader's Raft future: hashicorp/raft
// issue 498.)
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs for seconds")
	}
	dur := 6 * time.Second
	if s, err := strconv.Atoi(os.Getenv("LOGD_CHAOS_SECONDS")); err == nil {
		dur = time.Duration(s) * time.Second
	}
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("LOGD_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (LOGD_CHAOS_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}, Log: func(o *log.Options) { o.SegmentBytes = 16 << 10 }})
	ps := make([]*producer, 3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ps {
		ps[i] = &producer{key: fmt.Sprintf("k%d", i), acked: map[int]int64{}}
		wg.Add(1)
		go func() { defer wg.Done(); ps[i].run(t, c, stop) }()
	}
	nodes := c.Nodes()
	pick := func() *clustertest.Node { return nodes[rng.IntN(len(nodes))] }
	var down *clustertest.Node
	var actions []string
	for end := time.Now().Add(dur); time.Now().Before(end); {
		switch rng.IntN(6) {
		case 0:
			a, b := pick(), pick()
			if a != b {
				c.Net.Partition(a.ID, b.ID)
				actions = append(actions, "cut "+a.ID+"-"+b.ID)
			}
		case 1:
			n := pick()
			c.Net.Isolate(n.ID, c.IDs()...)
			actions = append(actions, "isolate "+n.ID)
		case 2:
			c.Net.Heal()
			actions = append(actions, "heal")
		case 3:
			a, b := pick(), pick()
			if a != b {
				d := time.Duration(rng.IntN(30)) * time.Millisecond
				c.Net.SetDelay(a.ID, b.ID, d)
				actions = append(actions, fmt.Sprintf("delay %s-%s %v", a.ID, b.ID, d))
			}
		case 4:
			if down == nil {
				down = pick()
				c.Kill(down.ID)
				actions = append(actions, "kill "+down.ID)
			}
		case 5:
			if down != nil {
				c.Restart(down.ID)
				actions = append(actions, "restart "+down.ID)
				down = nil
			}
		}
		time.Sleep(time.Duration(200+rng.IntN(500)) * time.Millisecond)
	}
	t.Logf("actions: %v", actions)
	c.Net.Heal()
	for _, n := range nodes {
		for _, m := range nodes {
			c.Net.SetDelay(n.ID, m.ID, 0)
		}
	}
	if down != nil {
		c.Restart(down.ID)
	}
	close(stop)
	wg.Wait()
	c.WaitConverged(group, 60*time.Second)
	total, sent := 0, 0
	for _, p := range ps {
		total += len(p.acked)
		sent += p.sent
		for _, n := range nodes {
			p.check(t, n)
		}
	}
	t.Logf("%d of %d appends acknowledged", total, sent)
}

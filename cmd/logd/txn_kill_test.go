package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/freeport"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnKillRecords is how many records TestBinTransactSessionKill9 moves:
// LOGD_TXN_KILL_RECORDS when set (make test-txn-kill sets 100,000).
func txnKillRecords(t *testing.T) int {
	n := 10_000
	if s := os.Getenv("LOGD_TXN_KILL_RECORDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("LOGD_TXN_KILL_RECORDS=%q is not a positive count", s)
		}
		n = v
	}
	return n
}

// txnNode is a `logd serve` process of a 3-node cluster with fixed
// addresses, so that it can be restarted on its data directory.
type txnNode struct {
	args  []string
	kafka string
	bin   *binNode
}

// startTxnCluster3 starts three `logd serve` processes with Kafka
// listeners on fixed ports and waits until all three are members.
func startTxnCluster3(t *testing.T) []*txnNode {
	t.Helper()
	port := func() string {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var nodes []*txnNode
	var addrs []string
	for i := range 3 {
		n := &txnNode{kafka: port()}
		addr := port()
		n.args = []string{"--data-dir", t.TempDir(), "--node-id", fmt.Sprintf("n%d", i+1), "--addr", addr,
			"--http-addr", "", "--kafka-addr", n.kafka, "--raft-addr", port()}
		if i == 0 {
			n.args = append(n.args, "--bootstrap")
		} else {
			n.args = append(n.args, "--join", addrs[0])
		}
		n.bin = startBin(t, nil, n.args...)
		nodes, addrs = append(nodes, n), append(addrs, addr)
	}
	okBin(t, nil, "", "cluster", "wait", "--nodes", "3", "--server", strings.Join(addrs, ","), "--timeout", "60s")
	return nodes
}

// franz-go's GroupTransactSession moves records from topic in to topic
// out on a 3-node cluster while a node is killed -9 and restarted; then a
// read_committed consumer finds every input record exactly once in the
// output, and no record of an aborted attempt.
func TestBinTransactSessionKill9(t *testing.T) {
	n := txnKillRecords(t)
	nodes := startTxnCluster3(t)
	seeds := []string{nodes[0].kafka, nodes[1].kafka, nodes[2].kafka}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for _, topic := range []string{"in", "out"} {
		eventually(t, 60*time.Second, "topic "+topic+" is created", func() bool {
			_, err := kadm.NewClient(adm).CreateTopic(ctx, 3, 3, nil, topic)
			return err == nil || strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS")
		})
	}
	in, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"),
		kgo.ProducerBatchMaxBytes(2048)) // small batches: many transactions
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		in.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	in.Close()
	committed := moveWithKill(t, ctx, seeds, nodes, n)
	checkTxnOutput(t, ctx, seeds, n, committed)
}

// moveWithKill runs the consume-transform-produce loop until every input
// record was moved in a committed transaction, killing -9 the last node
// in the middle of a transaction a third of the way, and restarting it
// half way. Each output record names its attempt (a transaction); the
// committed ones are returned.
func moveWithKill(t *testing.T, ctx context.Context, seeds []string, nodes []*txnNode, n int) map[int]bool {
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("eos-kill"),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("out"),
		kgo.TransactionTimeout(10*time.Second), kgo.MetadataMinAge(200*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	moved := map[string]bool{}
	committed := map[int]bool{}
	attempt, aborted, killed, restarted := 0, 0, false, false
	victim := nodes[2]
	for len(moved) < n {
		if killed && !restarted && len(moved) >= n/2 {
			victim.bin = startBin(t, nil, victim.args...)
			t.Logf("restarted n3 after %d records moved", len(moved))
			restarted = true
		}
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("moved %d of %d records", len(moved), n)
		}
		if fs.Empty() {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		attempt++
		var vals []string
		fs.EachRecord(func(r *kgo.Record) {
			vals = append(vals, string(r.Value))
			sess.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s@%d", r.Value, attempt)), nil)
		})
		if !killed && len(moved) >= n/3 {
			victim.bin.signal(syscall.SIGKILL)
			t.Logf("killed n3 (kill -9) in a transaction after %d records moved", len(moved))
			killed = true
		}
		ok, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !ok {
			aborted++
			continue // the session rewinds to the group's committed offsets
		}
		committed[attempt] = true
		for _, v := range vals {
			moved[v] = true
		}
	}
	t.Logf("moved %d records in %d committed transactions, %d aborted", n, len(committed), aborted)
	return committed
}

// checkTxnOutput reads topic out read_committed until it is idle and
// fails unless every input record is there once, from a committed
// transaction.
func checkTxnOutput(t *testing.T, ctx context.Context, seeds []string, n int, committed map[int]bool) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := make([]int, n)
	total := 0
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		if errors.Is(pctx.Err(), context.DeadlineExceeded) && fs.NumRecords() == 0 && total >= n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("read %d records of out, want %d", total, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			total++
			v, a, _ := strings.Cut(string(r.Value), "@")
			i, err1 := strconv.Atoi(v)
			at, err2 := strconv.Atoi(a)
			switch {
			case err1 != nil || err2 != nil || i < 0 || i >= n:
				t.Fatalf("out holds %q at p%d offset %d, no output of this test", r.Value, r.Partition, r.Offset)
			case !committed[at]:
				t.Fatalf("read_committed returned %q (p%d offset %d) of aborted attempt %d", r.Value, r.Partition, r.Offset, at)
			}
			seen[i]++
		})
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("input record %d is in the output %d times (%d records read)", i, c, total)
		}
	}
}

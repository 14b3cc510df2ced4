package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaNode is a cluster node that also serves Kafka on a fixed address.
type kafkaNode struct {
	clusterNode
	kafka string
}

func (k *kafkaNode) start(t *testing.T) {
	t.Helper()
	args := []string{"--addr", k.api, "--node-id", k.id, "--raft-addr", k.raft, "--kafka-addr", k.kafka}
	if k.join == "" {
		args = append(args, "--bootstrap")
	} else {
		args = append(args, "--join", k.join)
	}
	k.n = startNode(t, k.dir, args...)
}

// startKafkaCluster starts three logd processes, each with a Kafka
// listener, and waits until the cluster has formed.
func startKafkaCluster(t *testing.T) []*kafkaNode {
	dir := t.TempDir()
	var nodes []*kafkaNode
	for i := range 3 {
		k := &kafkaNode{clusterNode: clusterNode{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), api: freeAddr(t), raft: freeAddr(t)}, kafka: freeAddr(t)}
		if i > 0 {
			k.join = nodes[0].api
		}
		nodes = append(nodes, k)
		k.start(t)
	}
	servers := grpcServers(nodes)
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(cli(t, servers, "cluster", "status"), "true") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not form:\n%s", cli(t, servers, "cluster", "status"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nodes
}

func grpcServers(nodes []*kafkaNode) string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.api)
	}
	return strings.Join(s, ",")
}

// kafkaLog is what a test's producer acknowledged and its consumer read.
type kafkaLog struct {
	mu       sync.Mutex
	acked    map[string][2]int64 // value -> partition, offset
	read     map[[2]int64]string // partition, offset -> value
	readAt   map[string][2]int64 // value -> where it was read
	problems []string
}

func (l *kafkaLog) ack(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[string(r.Value)] = [2]int64{int64(r.Partition), r.Offset}
}

func (l *kafkaLog) consumed(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, v := [2]int64{int64(r.Partition), r.Offset}, string(r.Value)
	if prev, ok := l.read[at]; ok && prev != v {
		l.problems = append(l.problems, fmt.Sprintf("%d/%d read as %q and as %q", at[0], at[1], prev, v))
	}
	if prev, ok := l.readAt[v]; ok && prev != at {
		l.problems = append(l.problems, fmt.Sprintf("%q read at %d/%d and at %d/%d (a duplicate)", v, prev[0], prev[1], at[0], at[1]))
	}
	l.read[at], l.readAt[v] = v, at
}

// missing counts the acknowledged records not read yet.
func (l *kafkaLog) missing() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for v := range l.acked {
		if _, ok := l.readAt[v]; !ok {
			n++
		}
	}
	return n
}

// partitionLeader is the node whose Kafka listener leads the partition,
// as Metadata says.
func partitionLeader(ctx context.Context, t *testing.T, adm *kadm.Client, nodes []*kafkaNode, topic string, p int32) *kafkaNode {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if pd, ok := md.Topics[topic].Partitions[p]; ok && pd.Err == nil && pd.Leader >= 0 {
				for _, b := range md.Brokers {
					if b.NodeID != pd.Leader {
						continue
					}
					addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
					for _, n := range nodes {
						if n.kafka == addr {
							return n
						}
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no leader for %s/%d in Metadata", topic, p)
	return nil
}

// TestKafkaClusterKill9PartitionLeader: a kgo idempotent producer (acks
// all) and a kgo group consumer keep working while the Raft leader of a
// partition is killed with SIGKILL and restarted; in the end every
// acknowledged record has been read by the group, at the partition and
// offset it was acknowledged at, and no record was stored twice. A record
// read again after a rebalance is fine (same offset, same value).
func TestKafkaClusterKill9PartitionLeader(t *testing.T) {
	logdBinary(t) // built once per package run: not this test's time
	begin := time.Now()
	nodes := startKafkaCluster(t)
	cli(t, grpcServers(nodes), "topic", "create", "kevents", "--partitions", "3")
	t.Logf("cluster formed and topic created in %v", time.Since(begin).Round(time.Millisecond))
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.kafka)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("kg"), kgo.ConsumeTopics("kevents"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second), kgo.RebalanceTimeout(10*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()

	l := &kafkaLog{acked: map[string][2]int64{}, read: map[[2]int64]string{}, readAt: map[string][2]int64{}}
	var wg sync.WaitGroup
	consCtx, stopConsumer := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			fs.EachRecord(l.consumed)
		}
	}()
	defer func() { stopConsumer(); wg.Wait() }()

	var produceErr error
	var errOnce sync.Once
	stopProducing := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			case <-time.After(2 * time.Millisecond):
			}
			r := &kgo.Record{Topic: "kevents", Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i)}
			prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					errOnce.Do(func() { produceErr = fmt.Errorf("produce %s: %w", r.Value, err) })
					return
				}
				l.ack(r)
			})
		}
	}()

	adm := kadm.NewClient(prod)
	time.Sleep(2 * time.Second)
	victim := partitionLeader(ctx, t, adm, nodes, "kevents", 0)
	ackedBefore := len(l.snapshotAcked())
	victim.n.kill()
	t.Logf("killed %s, the leader of kevents/0, after %d acknowledged records", victim.id, ackedBefore)
	time.Sleep(4 * time.Second)
	victim.start(t)
	time.Sleep(4 * time.Second)
	close(stopProducing)
	t.Logf("restarted %s; flushing at %v", victim.id, time.Since(begin).Round(time.Millisecond))
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if produceErr != nil {
		t.Fatal(produceErr)
	}
	acked := l.snapshotAcked()
	if len(acked) <= ackedBefore {
		t.Fatalf("no record acknowledged after the kill (%d before, %d in all)", ackedBefore, len(acked))
	}
	for l.missing() > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	stopConsumer()
	wg.Wait()
	l.check(t)
	t.Logf("all read at %v", time.Since(begin).Round(time.Millisecond))
	t.Logf("%d acknowledged records read by the group through kill -9 of %s", len(acked), victim.id)
	var stops sync.WaitGroup
	for _, n := range nodes {
		stops.Add(1)
		go func() { defer stops.Done(); n.n.stop() }()
	}
	stops.Wait()
	t.Logf("stopped at %v", time.Since(begin).Round(time.Millisecond))
}

func (l *kafkaLog) snapshotAcked() map[string][2]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][2]int64, len(l.acked))
	for v, at := range l.acked {
		out[v] = at
	}
	return out
}

// check fails t for every acknowledged record not read where it was
// acknowledged, and for every duplicate the consumer saw.
func (l *kafkaLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.problems {
		t.Error(p)
	}
	lost := 0
	for v, at := range l.acked {
		got, ok := l.readAt[v]
		switch {
		case !ok:
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %q at %d/%d was never read", v, at[0], at[1])
			}
		case got != at:
			t.Errorf("acknowledged %q at %d/%d, read at %d/%d", v, at[0], at[1], got[0], got[1])
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records never read", lost, len(l.acked))
	}
}

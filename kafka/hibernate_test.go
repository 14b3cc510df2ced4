package kafka_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// sleepingLeader waits until every replica of topic's partition 0 sleeps
// and returns the node they name as its leader.
func sleepingLeader(t *testing.T, cl *nodetest.Cluster, topic string) *nodetest.Node {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		asleep, leader := 0, ""
		for _, n := range cl.Nodes() {
			for _, p := range n.Server().Broker().Cluster().LocalStatus(broker.Node{}).Partitions {
				if p.Topic == topic && p.Partition == 0 && strings.HasPrefix(p.RaftState, "Asleep") {
					asleep, leader = asleep+1, p.Leader
				}
			}
		}
		if asleep == 3 {
			for _, n := range cl.Nodes() {
				if n.ID == leader {
					return n
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 replicas of %s asleep after 60s", asleep, topic)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// franz-go produces to and consumes from partitions that went to sleep
// (--partition-hibernate-after), also when the node that led a sleeping
// partition has died: metadata then names a live replica, where the
// produce wakes the partition.
func TestKafkaClientsWakeSleepingPartitions(t *testing.T) {
	addrs, cl := startClusterWith(t, func(c *node.Config) { c.Cluster.HibernateAfter, c.Cluster.WakeGrace = time.Second, time.Second })
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "nap"); err != nil {
		t.Fatal(err)
	}
	produce := func(v string, seeds ...string) {
		t.Helper()
		p := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("nap"))
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("a", seeds...)
	sleepingLeader(t, cl, "nap")
	produce("b", seeds...) // wakes it
	dead := sleepingLeader(t, cl, "nap")
	dead.Stop()
	var rest []string
	for id, a := range addrs {
		if id != dead.ID {
			rest = append(rest, a)
		}
	}
	produce("c", rest...)
	cons := newClient(t, rest[0], kgo.SeedBrokers(rest...), kgo.ConsumeTopics("nap"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("consumed %q, want a b c", got)
	}
}

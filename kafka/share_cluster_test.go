package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/internal/node/nodetest"
)

// clusterShareClient is a share consumer of topic in group that fetches
// only when polled (no records held in a buffer unseen), counting the
// acknowledgements the partitions' leaders refused.
func clusterShareClient(t *testing.T, seeds []string, topic, group string, ackErrs *atomic.Int64) *kgo.Client {
	t.Helper()
	return newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.ShareMaxRecords(10), kgo.ShareMaxRecordsStrict(),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if !rs.Ok() {
				ackErrs.Add(1)
			}
		}))
}

// pollShareCluster polls cl once (up to two seconds); errors of a
// partition whose leader moved are the client's to retry.
func pollShareCluster(ctx context.Context, cl *kgo.Client) []*kgo.Record {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return cl.PollFetches(ctx).Records()
}

// partitionLeaderNode is the node leading topic's partition 0 as the
// cluster's metadata says.
func partitionLeaderNode(t *testing.T, c *nodetest.Cluster, adm *kadm.Client, topic string) *nodetest.Node {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		md, err := adm.Metadata(testCtx(t), topic)
		if err == nil {
			if p, ok := md.Topics[topic].Partitions[0]; ok && p.Leader >= 0 {
				for _, b := range md.Brokers {
					for _, n := range c.Nodes() {
						if s := n.Server(); s != nil && b.NodeID == p.Leader && s.KafkaAddr() == fmt.Sprintf("%s:%d", b.Host, b.Port) {
							return n
						}
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader of %s/0", topic)
	return nil
}

// shareEarliestOnOneNode sets share group's share.auto.offset.reset to
// earliest on a node that does not lead the cluster metadata (which passes it on to the leader), and
// waits until every node applied it: the group's configuration is the
// cluster's, not a node's.
func shareEarliestOnOneNode(ctx context.Context, t *testing.T, c *nodetest.Cluster, group string) {
	t.Helper()
	var at *nodetest.Node
	for _, n := range c.Nodes() {
		if n.Server().Broker().CoordinatesGroups() != nil {
			at = n
		}
	}
	if at == nil {
		t.Fatal("every node leads the cluster metadata")
	}
	if err := at.Server().Broker().SetShareGroupConfig(ctx, "", group, map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatalf("share group config set on %s: %v", at.ID, err)
	}
	for _, n := range c.Nodes() {
		for n.Server().Broker().ShareGroupConfigOf(group).AutoOffsetReset != "earliest" {
			if ctx.Err() != nil {
				t.Fatalf("%s never applied share group %s's share.auto.offset.reset=earliest set on %s", n.ID, group, at.ID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A share group on a 3-node cluster, the topic's partition replicated on
// every node: members accept records, another holds some unacknowledged,
// then the partition's leader stops. The state moves with the partition's
// Raft log: at the new leader no accepted record is delivered again, the
// held records come back with their delivery counted, and every record is
// accepted in the end.
func TestShareClusterLeaderFailover(t *testing.T) {
	const count = 100
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "sq"); err != nil {
		t.Fatal(err)
	}
	shareEarliestOnOneNode(ctx, t, c, "sg")
	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("sq"))
	for i := range count {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var ackErrs atomic.Int64
	b := clusterShareClient(t, seeds, "sq", "sg", &ackErrs)
	accepted := map[int64]bool{}
	for len(accepted) < count/3 && ctx.Err() == nil {
		for _, r := range pollShareCluster(ctx, b) {
			if r.DeliveryCount() != 1 || accepted[r.Offset] {
				t.Fatalf("before the failover offset %d delivered with count %d (accepted before: %v)", r.Offset, r.DeliveryCount(), accepted[r.Offset])
			}
			r.Ack(kgo.AckAccept)
			accepted[r.Offset] = true
		}
	}
	if err := b.FlushAcks(ctx); err != nil || ackErrs.Load() != 0 {
		t.Fatalf("acknowledgements before the failover: %v, %d refused", err, ackErrs.Load())
	}
	a := clusterShareClient(t, seeds, "sq", "sg", &ackErrs)
	held := map[int64]bool{}
	for len(held) == 0 && ctx.Err() == nil {
		for _, r := range pollShareCluster(ctx, a) {
			if accepted[r.Offset] {
				t.Fatalf("offset %d delivered again after it was accepted", r.Offset)
			}
			held[r.Offset] = true // never acknowledged: a polls no more
		}
	}

	if ctx.Err() != nil {
		t.Fatalf("before the failover: %d records accepted, %d held", len(accepted), len(held))
	}
	leader := partitionLeaderNode(t, c, adm, "sq")
	leader.Stop()

	// An offset counts as accepted once a flush of its acknowledgement
	// met no refusal (one sent to the old leader may be refused: the
	// record then comes again).
	redelivered := map[int64]bool{}
	for len(accepted) < count && ctx.Err() == nil {
		var pending []int64
		refused := ackErrs.Load()
		for _, r := range pollShareCluster(ctx, b) {
			switch {
			case accepted[r.Offset]:
				t.Fatalf("offset %d delivered again after it was accepted (count %d)", r.Offset, r.DeliveryCount())
			case held[r.Offset]:
				if r.DeliveryCount() < 2 {
					t.Fatalf("offset %d, acquired before the failover, delivered with count %d", r.Offset, r.DeliveryCount())
				}
				redelivered[r.Offset] = true
			}
			r.Ack(kgo.AckAccept)
			pending = append(pending, r.Offset)
		}
		if err := b.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		if ackErrs.Load() == refused {
			for _, o := range pending {
				accepted[o] = true
			}
		}
	}
	if len(accepted) != count || len(redelivered) != len(held) {
		t.Fatalf("accepted %d of %d records; %d of the %d held before the failover came back", len(accepted), count, len(redelivered), len(held))
	}
}

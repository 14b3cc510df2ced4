package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/routing"
)

// The cluster client tests run one Kafka client that nobody here wrote
// (Sarama, kafka-go, confluent-kafka-python, kafkajs) through its admin,
// produce and group paths against three in-process nodes with RF 3. The
// client under test does the work; a franz-go admin client only looks at
// what the cluster holds afterwards (leaders, groups, committed offsets).

// clientRig is a 3-node cluster and a franz-go admin client to check it.
type clientRig struct {
	t     *testing.T
	c     *nodetest.Cluster
	addrs map[string]string // Kafka listener by node id
	seeds []string
	adm   *kadm.Client
}

func newClientRig(t *testing.T) *clientRig {
	addrs, c := startClusterWith(t)
	r := &clientRig{t: t, c: c, addrs: addrs}
	for _, a := range addrs {
		r.seeds = append(r.seeds, a)
	}
	sort.Strings(r.seeds)
	r.adm = kadm.NewClient(newClient(t, r.seeds[0], kgo.SeedBrokers(r.seeds...)))
	waitFor(t, "metadata listing 3 brokers and a controller", func() bool {
		md, err := r.adm.Metadata(testCtx(t))
		return err == nil && len(md.Brokers) == 3 && md.Controller >= 0
	})
	return r
}

// clientRecord is a record as a client produced or consumed it.
type clientRecord struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// checkTopic checks that topic has 3 partitions of 3 replicas each, led
// by more than one node, so the records a client spreads over them go to
// different leaders.
func (r *clientRig) checkTopic(topic string) {
	r.t.Helper()
	var leaders map[int32]bool
	waitFor(r.t, "leaders of "+topic, func() bool {
		md, err := r.adm.Metadata(testCtx(r.t), topic)
		if err != nil {
			return false
		}
		td := md.Topics[topic]
		leaders = map[int32]bool{}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.Replicas) != 3 {
				return false
			}
			leaders[p.Leader] = true
		}
		return len(td.Partitions) == 3
	})
	if len(leaders) < 2 {
		r.t.Errorf("all partitions of %s are led by %v: the test needs leaders on different nodes", topic, leaders)
	}
}

// checkRouting checks that each produced record is in the partition
// logd's murmur2 routing gives its key, at an offset of its own.
func (r *clientRig) checkRouting(recs []clientRecord, partitions int) {
	r.t.Helper()
	seen := map[[2]int64]bool{}
	used := map[int32]bool{}
	for _, rec := range recs {
		if want := routing.ForKey([]byte(rec.Key), partitions); rec.Partition != want {
			r.t.Errorf("record %s went to partition %d, logd routes key %q to %d", rec.Value, rec.Partition, rec.Key, want)
		}
		k := [2]int64{int64(rec.Partition), rec.Offset}
		if seen[k] {
			r.t.Errorf("two records acknowledged at partition %d offset %d", rec.Partition, rec.Offset)
		}
		seen[k] = true
		used[rec.Partition] = true
	}
	if len(used) != partitions {
		r.t.Errorf("records went to partitions %v, want all %d", used, partitions)
	}
}

// checkExactlyOnce checks that consumed holds each produced record once.
func (r *clientRig) checkExactlyOnce(what string, produced, consumed []clientRecord) {
	r.t.Helper()
	key := func(c clientRecord) string { return fmt.Sprintf("%d/%d/%s/%s", c.Partition, c.Offset, c.Key, c.Value) }
	var want, got []string
	for _, c := range produced {
		want = append(want, key(c))
	}
	for _, c := range consumed {
		got = append(got, key(c))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		r.t.Errorf("%s: consumed %d records %v, want the %d produced %v", what, len(got), got, len(want), want)
	}
}

// waitGroupStable waits until group is stable with members members, each
// with partitions assigned.
func (r *clientRig) waitGroupStable(group string, members int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		gs, err := r.adm.DescribeGroups(testCtx(r.t), group)
		if err == nil {
			g := gs[group]
			assigned := 0
			for _, m := range g.Members {
				if ca, ok := m.Assigned.AsConsumer(); ok && len(ca.Topics) > 0 {
					assigned++
				}
			}
			if g.Err == nil && g.State == "Stable" && len(g.Members) == members && assigned == members {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("group %s did not become stable with %d assigned members: %v", group, members, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkCommittedAtEnd checks that group committed the end of each of
// topic's partitions.
func (r *clientRig) checkCommittedAtEnd(group, topic string) {
	r.t.Helper()
	ends, err := r.adm.ListEndOffsets(testCtx(r.t), topic)
	if err != nil {
		r.t.Fatal(err)
	}
	offs, err := r.adm.FetchOffsets(testCtx(r.t), group)
	if err != nil {
		r.t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := offs.Lookup(topic, e.Partition)
		if !ok || c.Err != nil || c.At != e.Offset {
			r.t.Errorf("group %s committed %+v for %s/%d, whose end is %d", group, c, topic, e.Partition, e.Offset)
		}
	})
}

// moveCoordinator stops the node that leads the metadata (the group
// coordinator) and waits until another one coordinates the groups.
func (r *clientRig) moveCoordinator() {
	r.t.Helper()
	old := metaLeaderNode(r.t, r.c)
	old.Stop()
	if n := metaLeaderNode(r.t, r.c); n == old {
		r.t.Fatal("the stopped node coordinates")
	}
	r.t.Logf("stopped node %s, the group coordinator", old.ID)
}

// runCtx bounds a client's whole run.
func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

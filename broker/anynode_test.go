package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
)

// spreadTopic is a two-node cluster (n1 leads the metadata; bob is a super
// user on n2 only) with topic t of 4 partitions on both nodes, once each
// node knows every partition's leader and each node leads at least one.
// leaders maps each partition to the broker that leads it.
func spreadTopic(t *testing.T) (n1, n2 *broker.Broker, leaders []*broker.Broker) {
	t.Helper()
	admin, bob := auth.User("admin"), auth.User("bob")
	n1 = peerBroker(t, "n1", "", admin)
	waitFor(t, "n1 leads the metadata", n1.Cluster().IsMetaLeader)
	n2 = peerBroker(t, "n2", n1.Cluster().RaftAddr(), admin, bob)
	waitFor(t, "n2 joined and knows the leader", func() bool {
		return slices.Equal(n2.Members(), []string{"n1", "n2"}) && n2.Cluster().MetaLeader().RaftAddr != ""
	})
	ctx := context.Background()
	pr := broker.Principal(admin.String())
	cfg := partition.DefaultConfig("t")
	cfg.Partitions, cfg.Replicas = 4, 2
	if _, err := n1.CreateTopic(ctx, pr, cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every partition of t has a leader both nodes know, and each node leads one", func() bool {
		leaders = nil
		by := map[string]*broker.Broker{"n1": n1, "n2": n2}
		seen := map[string]bool{}
		for _, b := range []*broker.Broker{n1, n2} {
			info, err := b.Topic(ctx, pr, "t")
			if err != nil || len(info.Partitions) != 4 {
				return false
			}
			for i, p := range info.Partitions {
				if p.Leader == "" || (len(leaders) == 4 && leaders[i] != by[p.Leader]) {
					return false
				}
				if len(leaders) < 4 {
					leaders = append(leaders, by[p.Leader])
				}
				seen[p.Leader] = true
			}
		}
		return len(seen) == 2
	})
	return n1, n2, leaders
}

// Through AnyNode a node produces records spread over partitions other
// nodes lead, and answers once with each record's offset; it reads each
// partition from wherever it is led, and waits on a leader for records
// that come later; the groups are served by the node that coordinates
// them. The broker's own methods refuse what another node leads.
func TestAnyNodeProducesAndReadsEveryPartition(t *testing.T) {
	_, n2, leaders := spreadTopic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr := broker.Principal(auth.User("admin").String())
	var recs []broker.Record
	for i := range 8 {
		recs = append(recs, broker.Record{Partition: int32(i % 4), Value: []byte{byte('a' + i)}})
	}
	req := broker.RecordsRequest{Principal: pr, Topic: "t", Records: recs, ProducerID: -1}
	writes, err := n2.ProduceRecords(ctx, req)
	var nl *broker.NotLeaderError
	if err != nil || !slices.ContainsFunc(writes, func(w broker.RecordsAppend) bool { return errors.As(w.Err, &nl) }) {
		t.Fatalf("n2's own ProduceRecords: %+v %v, want a partition refused for another node's lead", writes, err)
	}
	before := map[int32]int64{}
	for _, w := range writes {
		if w.Err == nil {
			before[w.Partition] = w.Result.LastOffset + 1
		}
	}
	writes, err = n2.AnyNode().ProduceRecords(ctx, req)
	if err != nil || len(writes) != 4 {
		t.Fatalf("produce through AnyNode: %+v %v", writes, err)
	}
	for _, w := range writes {
		if w.Err != nil || w.Result.BaseOffset != before[w.Partition] || w.Result.LastOffset != before[w.Partition]+1 {
			t.Fatalf("partition %d: %+v, want records at %d and %d", w.Partition, w, before[w.Partition], before[w.Partition]+1)
		}
	}
	var fps []broker.FetchPartition
	for p := range int32(4) {
		fps = append(fps, broker.FetchPartition{Topic: "t", Partition: p, Offset: before[p]})
	}
	res, err := n2.AnyNode().Fetch(ctx, broker.FetchRequest{Principal: pr, Partitions: fps})
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range res.Partitions {
		if fp.Err != nil || fp.Records != 2 || fp.NextOffset != before[fp.Partition]+2 {
			t.Fatalf("partition %d read through n2: %d records to %d, %v", fp.Partition, fp.Records, fp.NextOffset, fp.Err)
		}
	}
	res.Release()

	// A read of a partition n1 leads waits there for the next record.
	remote := int32(slices.IndexFunc(leaders, func(b *broker.Broker) bool { return b != n2 }))
	at := before[remote] + 2
	go func() {
		time.Sleep(300 * time.Millisecond)
		leaders[remote].Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "t", Partition: remote, Batch: records("late")})
	}()
	res, err = n2.AnyNode().Fetch(ctx, broker.FetchRequest{Principal: pr, MinBytes: 1, MaxWait: 30 * time.Second,
		Partitions: []broker.FetchPartition{{Topic: "t", Partition: remote, Offset: at}}})
	if err != nil || res.Partitions[0].Err != nil || res.Partitions[0].Records != 1 {
		t.Fatalf("a waiting read of partition %d through n2: %+v %v", remote, res.Partitions, err)
	}
	batch.Split(res.Partitions[0].Batches, func(b []byte, _ batch.Info) error {
		if _, rs, err := batch.Decode(b, at); err != nil || string(rs[0].Value) != "late" {
			t.Fatalf("the record read: %v %v", rs, err)
		}
		return nil
	})
	res.Release()

	// A read of every partition at its end waits here and on each leader,
	// and answers at the first record, the other partitions empty.
	for p := range fps {
		fps[p].Offset = before[int32(p)] + 2
	}
	fps[remote].Offset++
	go func() {
		time.Sleep(300 * time.Millisecond)
		leaders[remote].Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "t", Partition: remote, Batch: records("later")})
	}()
	res, err = n2.AnyNode().Fetch(ctx, broker.FetchRequest{Principal: pr, MinBytes: 1, MaxWait: 30 * time.Second, Partitions: fps})
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range res.Partitions {
		if want := map[bool]int{true: 1}[fp.Partition == remote]; fp.Err != nil || fp.Records != want {
			t.Fatalf("partition %d in a waiting read of all through n2: %d records, %v; want %d", fp.Partition, fp.Records, fp.Err, want)
		}
	}
	res.Release()

	if _, err := n2.ListMemberGroups(ctx, pr); err == nil {
		t.Fatal("n2 lists the groups itself: it does not coordinate them")
	}
	if gs, err := n2.AnyNode().ListMemberGroups(ctx, pr); err != nil || len(gs) != 0 {
		t.Fatalf("groups through n2: %+v %v", gs, err)
	}
	if _, err := n2.AnyNode().DescribeGroup(ctx, pr, "nosuch"); !errors.Is(err, groups.ErrGroupNotFound) {
		t.Fatalf("describe a group through n2: %v, want ErrGroupNotFound from the coordinator", err)
	}
}

// A produce or read passed on carries its principal, which the leader
// authorizes: bob, a super user on n2 only, is refused by n1 for the
// partitions n1 leads, and nothing is written there.
func TestAnyNodeLeaderAuthorizesThePrincipal(t *testing.T) {
	n1, n2, leaders := spreadTopic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bob := broker.Principal(auth.User("bob").String())
	remote := int32(slices.Index(leaders, n1))
	writes, err := n2.AnyNode().ProduceRecords(ctx, broker.RecordsRequest{Principal: bob, Topic: "t", ProducerID: -1,
		Records: []broker.Record{{Partition: remote, Value: []byte("bobs")}}})
	if err != nil || len(writes) != 1 || !errors.Is(writes[0].Err, broker.ErrDenied) || !strings.Contains(writes[0].Err.Error(), "User:bob") {
		t.Fatalf("bob's produce to partition %d through n2: %+v %v, want denied naming User:bob", remote, writes, err)
	}
	admin := broker.Principal(auth.User("admin").String())
	if pos, err := n1.ListOffsets(ctx, admin, "t", []int32{remote}, broker.Latest); err != nil || pos[0].Offset != 0 {
		t.Fatalf("partition %d's end on n1: %+v %v, want nothing written", remote, pos, err)
	}
	res, err := n2.AnyNode().Fetch(ctx, broker.FetchRequest{Principal: bob,
		Partitions: []broker.FetchPartition{{Topic: "t", Partition: remote}}})
	if err != nil || !errors.Is(res.Partitions[0].Err, broker.ErrDenied) {
		t.Fatalf("bob's read of partition %d through n2: %+v %v, want denied", remote, res.Partitions, err)
	}
	res.Release()
}

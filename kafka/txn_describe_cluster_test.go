package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// On a 3-node cluster kadm finds a transaction on its coordinator (the
// metadata leader) and a partition's producers on its leader; asked
// directly, another node answers DescribeTransactions NOT_COORDINATOR,
// ListTransactions with no id and no error, and a follower
// DescribeProducers NOT_LEADER_OR_FOLLOWER.
func TestClusterDescribeTransactionsRouting(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	md := clusterMetadata(t, adm)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "dt"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.TransactionalID("c-txn"),
		kgo.TransactionTimeout(20*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "dt", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ds, err := adm.DescribeTransactions(ctx, "c-txn")
	d := ds["c-txn"]
	if err != nil || d.Err != nil || d.State != "Ongoing" || d.ProducerID != pid {
		t.Fatalf("describe c-txn: %+v (%v), want Ongoing of producer %d", d, err, pid)
	}
	coord := d.Coordinator
	other := otherBroker(md, coord)
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"c-txn"}
	dresp, err := dreq.RequestWith(ctx, cl.Broker(int(other)))
	if err != nil || !errors.Is(kerr.ErrorForCode(dresp.TransactionStates[0].ErrorCode), kerr.NotCoordinator) {
		t.Fatalf("describe c-txn on broker %d (the coordinator is %d): %+v (%v), want NOT_COORDINATOR", other, coord, dresp, err)
	}
	lresp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, cl.Broker(int(other)))
	if err != nil || lresp.ErrorCode != 0 || len(lresp.TransactionStates) != 0 {
		t.Fatalf("list on broker %d, not the coordinator: %+v (%v), want none and no error", other, lresp, err)
	}
	ls, err := adm.ListTransactions(ctx, nil, nil)
	if l, ok := ls["c-txn"]; err != nil || !ok || l.Coordinator != coord || l.State != "Ongoing" {
		t.Fatalf("list: %+v (%v), want c-txn Ongoing on broker %d", ls, err, coord)
	}

	dts, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"dt": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	dp := dts["dt"].Partitions[0]
	if p, ok := dp.ActiveProducers[pid]; dp.Err != nil || !ok || p.CurrentTxnStartOffset != 0 {
		t.Fatalf("dt/0's producers on broker %d: %+v (%v), want %d with a transaction at 0", dp.Leader, dp.ActiveProducers, dp.Err, pid)
	}
	follower := otherBroker(md, dp.Leader)
	preq := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "dt", []int32{0}
	preq.Topics = append(preq.Topics, rt)
	presp, err := preq.RequestWith(ctx, cl.Broker(int(follower)))
	if err != nil || !errors.Is(kerr.ErrorForCode(presp.Topics[0].Partitions[0].ErrorCode), kerr.NotLeaderForPartition) {
		t.Fatalf("dt/0's producers on follower %d (leader %d): %+v (%v), want NOT_LEADER_OR_FOLLOWER", follower, dp.Leader, presp, err)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// clusterMetadata is the metadata once it lists the three brokers.
func clusterMetadata(t *testing.T, adm *kadm.Client) kadm.Metadata {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		md, err := adm.Metadata(testCtx(t))
		if err == nil && len(md.Brokers) == 3 {
			return md
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata lists %d brokers (%v), want 3", len(md.Brokers), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// otherBroker is a broker of md that is not id.
func otherBroker(md kadm.Metadata, id int32) int32 {
	for _, b := range md.Brokers {
		if b.NodeID != id {
			return b.NodeID
		}
	}
	return -1
}

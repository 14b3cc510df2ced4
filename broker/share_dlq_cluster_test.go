package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/share"
)

// threeNodes starts a 3-node cluster whose super user is admin.
func threeNodes(t *testing.T, admin auth.Principal) map[string]*broker.Broker {
	t.Helper()
	n1 := peerBroker(t, "n1", "", admin)
	waitFor(t, "n1 leads the metadata", n1.Cluster().IsMetaLeader)
	n2 := peerBroker(t, "n2", n1.Cluster().RaftAddr(), admin)
	n3 := peerBroker(t, "n3", n1.Cluster().RaftAddr(), admin)
	nodes := map[string]*broker.Broker{"n1": n1, "n2": n2, "n3": n3}
	waitFor(t, "n2 and n3 joined", func() bool {
		return slices.Equal(n1.Members(), []string{"n1", "n2", "n3"}) &&
			n2.Cluster().MetaLeader().RaftAddr != "" && n3.Cluster().MetaLeader().RaftAddr != ""
	})
	return nodes
}

// leaderOf waits until a node other than not leads partition 0 of topic
// by its own account, and returns it.
func leaderOf(t *testing.T, nodes map[string]*broker.Broker, pr broker.Principal, topic, not string) string {
	t.Helper()
	view := func(b *broker.Broker) string {
		info, err := b.Topic(context.Background(), pr, topic)
		if err != nil || len(info.Partitions) == 0 {
			return ""
		}
		return info.Partitions[0].Leader
	}
	var leader string
	waitFor(t, "a node leads "+topic, func() bool {
		for id, b := range nodes {
			if id != not && view(b) == id {
				leader = id
				return true
			}
		}
		return false
	})
	return leader
}

// dlqCluster is a 3-node cluster with topic q (1 partition, 3 replicas)
// and its dead-letter topic q.dlq (1 partition, 1 replica) led by
// another node than q's leader: the nodes, q's leader and q.dlq's.
func dlqCluster(t *testing.T, pr broker.Principal, admin auth.Principal) (nodes map[string]*broker.Broker, lead, dlead string) {
	t.Helper()
	nodes = threeNodes(t, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := partition.DefaultConfig("q")
	q.Partitions, q.Replicas = 1, 3
	if _, err := nodes["n1"].CreateTopic(ctx, pr, q); err != nil {
		t.Fatal(err)
	}
	d := partition.DefaultConfig("q.dlq")
	d.Partitions, d.Replicas = 1, 1
	if _, err := nodes["n1"].CreateTopic(ctx, pr, d); err != nil {
		t.Fatal(err)
	}
	lead = leaderOf(t, nodes, pr, "q", "")
	if dlead = leaderOf(t, nodes, pr, "q.dlq", ""); dlead == lead {
		to := "n1"
		for to == lead {
			to = map[string]string{"n1": "n2", "n2": "n3"}[to]
		}
		errs, err := nodes["n1"].MovePartitions(ctx, pr, []broker.PartitionMove{{Topic: "q.dlq", Replicas: []string{to}}})
		if err != nil || errs[0] != nil {
			t.Fatalf("move q.dlq to %s: %v %v", to, err, errs)
		}
		dlead = leaderOf(t, nodes, pr, "q.dlq", lead)
	}
	return nodes, lead, dlead
}

// In a cluster, a record rejected (with the member's reason) and one
// released at the delivery limit on q's leader are appended once each to
// q.dlq, whose leader is another node, with the source record's headers
// and those of their origin, and the share partition's window moves past
// them.
func TestShareDeadLetterInCluster(t *testing.T) {
	admin := auth.User("admin")
	pr := broker.Principal(admin.String())
	nodes, lead, dlead := dlqCluster(t, pr, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	L, D := nodes[lead], nodes[dlead]
	src := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{
		{Value: []byte("a"), Headers: []batch.Header{{Key: "trace", Value: []byte("t1")}}}, {Value: []byte("b")}})
	if _, err := L.Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "q", Batch: src}); err != nil {
		t.Fatal(err)
	}
	if err := L.SetShareGroupConfig(ctx, pr, "g", map[string]string{"share.auto.offset.reset": "earliest", "share.delivery.attempt.limit": "1"}); err != nil {
		t.Fatal(err)
	}
	fetchQ := func(epoch int32, acks []broker.ShareAck, reasons map[int64]string) broker.ShareFetchResult {
		t.Helper()
		res, err := L.ShareFetch(ctx, broker.ShareFetchRequest{Principal: pr, Group: "g", Member: "m", SessionEpoch: epoch, MaxRecords: 10,
			Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"}, Acks: acks, Reasons: reasons}}})
		if err != nil || (acks != nil && (len(res.Partitions) != 1 || res.Partitions[0].AckCode != broker.ShareOK || res.Partitions[0].AckErr != nil)) {
			t.Fatalf("share fetch %d on %s: %+v %v", epoch, lead, res, err)
		}
		return res
	}
	if got := acquired(fetchQ(0, nil, nil)); len(got) != 1 || got[0] != (broker.ShareRange{First: 0, Last: 1, DeliveryCount: 1}) {
		t.Fatalf("first fetch: %+v", got)
	}
	fetchQ(1, []broker.ShareAck{{First: 0, Last: 1, Types: []broker.ShareAckType{3, 2}}}, map[int64]string{0: "no such customer"})
	recs := clusterRecords(t, D, pr, "q.dlq")
	if len(recs) != 2 {
		t.Fatalf("q.dlq on %s holds %d records, want 2: %+v", dlead, len(recs), recs)
	}
	want := []map[string]string{
		{"trace": "t1", broker.DLQHeaderTopic: "q", broker.DLQHeaderPartition: "0", broker.DLQHeaderOffset: "0",
			broker.DLQHeaderGroup: "g", broker.DLQHeaderCount: "1", broker.DLQHeaderError: "no such customer"},
		{broker.DLQHeaderTopic: "q", broker.DLQHeaderPartition: "0", broker.DLQHeaderOffset: "1",
			broker.DLQHeaderGroup: "g", broker.DLQHeaderCount: "1"},
	}
	for i, r := range recs {
		h := headers(r)
		delete(h, broker.DLQHeaderTimestamp)
		for k, v := range want[i] {
			if h[k] != v {
				t.Errorf("dead letter %d header %s = %q, want %q (headers %v)", i, k, h[k], v, h)
			}
		}
		if len(h) != len(want[i]) {
			t.Errorf("dead letter %d headers %v, want %v", i, h, want[i])
		}
		if v := []string{"a", "b"}[i]; string(r.Value) != v {
			t.Errorf("dead letter %d value %q, want %q", i, r.Value, v)
		}
	}
	fetchQ(2, nil, nil)
	if n := len(clusterRecords(t, D, pr, "q.dlq")); n != 2 {
		t.Fatalf("q.dlq holds %d records after another fetch, want 2", n)
	}
	d, err := L.DescribeShareGroup(ctx, pr, "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 2 {
		t.Fatalf("describe on %s: %+v %v; want the window past 0..1", lead, d, err)
	}
}

// clusterRecords reads every record of partition 0 of topic on b, its
// leader.
func clusterRecords(t *testing.T, b *broker.Broker, pr broker.Principal, topic string) []batch.Record {
	t.Helper()
	res, err := b.Fetch(context.Background(), broker.FetchRequest{Principal: pr, Partitions: []broker.FetchPartition{{Topic: topic}}})
	if err != nil || len(res.Partitions) != 1 || res.Partitions[0].Err != nil {
		t.Fatalf("fetch %s: %+v %v", topic, res, err)
	}
	defer res.Release()
	var out []batch.Record
	err = batch.Split(res.Partitions[0].Batches, func(one []byte, _ batch.Info) error {
		_, recs, err := batch.Decode(one, 0)
		for _, r := range recs {
			r.Value = append([]byte(nil), r.Value...)
			out = append(out, r)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A dead letter appended by q's leader, which then died before archiving
// it, is appended again by the next leader (the state it loads keeps the
// record DeadLettering with its sequence), over the peer service to
// q.dlq's leader, which stores it once: the retry is a duplicate of the
// same writer and sequence.
func TestShareDeadLetterInClusterRetriedAfterFailover(t *testing.T) {
	admin := auth.User("admin")
	pr := broker.Principal(admin.String())
	nodes, lead, dlead := dlqCluster(t, pr, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	L, D := nodes[lead], nodes[dlead]
	if _, err := L.Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "q", Batch: records("poison")}); err != nil {
		t.Fatal(err)
	}
	if err := L.SetShareGroupConfig(ctx, pr, "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	if err := broker.DeadLetterUnarchived(ctx, L, "g", "q", 0); err != nil {
		t.Fatal(err)
	}
	if n := len(clusterRecords(t, D, pr, "q.dlq")); n != 1 {
		t.Fatalf("q.dlq holds %d records after the first append, want 1", n)
	}
	if err := L.Close(); err != nil {
		t.Fatal(err)
	}
	delete(nodes, lead)
	next := leaderOf(t, nodes, pr, "q", lead)
	res, err := nodes[next].ShareFetch(ctx, broker.ShareFetchRequest{Principal: pr, Group: "g", Member: "m2", MaxRecords: 10,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"}}}})
	if err != nil || len(acquired(res)) != 0 {
		t.Fatalf("fetch on the next leader %s: %+v %v; want nothing acquired", next, res, err)
	}
	recs := clusterRecords(t, D, pr, "q.dlq")
	if len(recs) != 1 || string(recs[0].Value) != "poison" || headers(recs[0])[broker.DLQHeaderOffset] != "0" {
		t.Fatalf("q.dlq holds %+v after the retry, want the one dead letter", recs)
	}
	cfg, err := nodes[next].TopicConfigs(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cfg, func(c partition.TopicConfig) bool { return c.Name == "q" })
	st, ok := nodes[next].Cluster().LocalReplica(meta.GroupOf(cfg[i], 0)).ShareState("g")
	if !ok {
		t.Fatal("no share state in q's state machine")
	}
	if p, err := share.Decode(st.State, share.Config{}); err != nil || p.Start() != 1 {
		t.Fatalf("replicated state on %s: %+v %v; want the window past 0 (archived)", next, p, err)
	}
}

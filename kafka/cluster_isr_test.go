package kafka_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceTo sends one batch to partition 0 of topic at the broker with
// kafka id leader, with the client's acks.
func produceTo(t *testing.T, cl *kgo.Client, leader int32, topic string, acks int16) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testBatch(t, "v")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(leader)).Request(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// On 3 nodes, a topic with min.insync.replicas 3 takes acks=all produces
// while its 3 replicas are up; once one node stops, its leader refuses
// them with NOT_ENOUGH_REPLICAS (acks=1 still stored), and with
// min.insync.replicas lowered to 2 they are stored again.
func TestClusterMinInsyncReplicas(t *testing.T) {
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	all := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	one := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	adm := kadm.NewClient(all)
	res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "isr3")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v %s", err, res.Err, res.ErrMessage)
	}
	var leader int32 = -1
	waitFor(t, "a leader of isr3 that stores an acks=all produce", func() bool {
		md, err := adm.Metadata(ctx, "isr3")
		if err != nil || md.Topics["isr3"].Partitions[0].Leader < 0 {
			return false
		}
		leader = md.Topics["isr3"].Partitions[0].Leader
		return produceTo(t, all, leader, "isr3", -1).ErrorCode == 0
	})
	for _, n := range c.Nodes() {
		if s := n.Server(); s != nil && s.Broker().LocalNode().KafkaID != leader {
			n.Stop()
			break
		}
	}
	waitFor(t, "NOT_ENOUGH_REPLICAS with a node stopped", func() bool {
		return produceTo(t, all, leader, "isr3", -1).ErrorCode == kerr.NotEnoughReplicas.Code
	})
	if p := produceTo(t, one, leader, "isr3", 1); p.ErrorCode != 0 {
		t.Fatalf("acks=1 with a node stopped: %d", p.ErrorCode)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}, "isr3")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	waitFor(t, "acks=all stored with min.insync.replicas 2", func() bool {
		return produceTo(t, all, leader, "isr3", -1).ErrorCode == 0
	})
}

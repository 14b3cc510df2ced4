package kafka_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
)

// startCluster starts three in-process nodes, each with a Kafka listener
// on 127.0.0.1, and returns the listeners' addresses by node id.
func startCluster(t *testing.T) map[string]string {
	addrs, _ := startClusterWith(t)
	return addrs
}

// startClusterWith is startCluster with the cluster, and mutate applied
// to each node's configuration.
func startClusterWith(t *testing.T, mutate ...func(*node.Config)) (map[string]string, *nodetest.Cluster) {
	cl := nodetest.NewCluster(t, 3, func(cfg *node.Config) {
		for _, m := range mutate {
			m(cfg)
		}
		cfg.Logger = quietLogger()
		cfg.KafkaAddr = "127.0.0.1:0"
	})
	out := map[string]string{}
	for _, n := range cl.Nodes() {
		out[n.ID] = n.Server().KafkaAddr()
	}
	return out, cl
}

// In a cluster Metadata lists every node, a node that does not lead a
// partition answers NOT_LEADER_OR_FOLLOWER, and franz-go follows the
// leaders to produce and consume, also in a group.
func TestClusterMetadataLeadersAndGroups(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	var md kadm.Metadata
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		md, err = adm.Metadata(ctx)
		if err == nil && len(md.Brokers) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata lists %d brokers (%v), want 3", len(md.Brokers), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "ct"); err != nil {
		t.Fatal(err)
	}
	const count = 30
	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("ct"))
	for i := 0; i < count; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	checkFollowerRefuses(t, addrs, adm)
	checkClusterConfigs(t, cl, adm)
	checkAdminOnFollower(t, cl, adm)
	checkDescribeCluster(t, cl, md)

	cons := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("ct"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < count {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), count, err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != count {
		t.Fatalf("committed offsets sum to %d, want %d", sum, count)
	}
	// Deleting the group, once its member left, deletes its offsets on the
	// cluster metadata (a replicated command).
	cons.Close()
	dr, err := adm.DeleteGroups(ctx, "cg")
	if err != nil || dr["cg"].Err != nil {
		t.Fatalf("DeleteGroups: %v %+v", err, dr)
	}
	if offs, err := adm.FetchOffsets(ctx, "cg"); err != nil || len(offs) != 0 {
		t.Fatalf("offsets after DeleteGroups: %+v %v", offs, err)
	}
	checkClusterEpochs(t, cl, adm)
	checkClusterDeleteRecords(t, adm)
}

// checkClusterDeleteRecords: kadm's DeleteRecords (sent to each
// partition's leader) moves the log start that ListOffsets then reports;
// a node that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
func checkClusterDeleteRecords(t *testing.T, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t)
	ends, err := adm.ListEndOffsets(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	ends.Each(func(o kadm.ListedOffset) {
		os.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset / 2})
	})
	res, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	os.Each(func(o kadm.Offset) {
		r, _ := res.Lookup(o.Topic, o.Partition)
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if r.Err != nil || r.LowWatermark != o.At || s.Offset != o.At {
			t.Errorf("partition %d: delete records to %d: %+v; earliest offset %d", o.Partition, o.At, r, s.Offset)
		}
	})
	md, err := adm.Metadata(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["ct"].Partitions[0].Leader
	for _, b := range md.Brokers {
		if b.NodeID == leader {
			continue
		}
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "ct"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, newClient(t, fmt.Sprintf("%s:%d", b.Host, b.Port)).Broker(int(b.NodeID)))
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; !errors.Is(kerr.ErrorForCode(code), kerr.NotLeaderForPartition) {
			t.Fatalf("delete records on follower %d: code %d, want NOT_LEADER_OR_FOLLOWER", b.NodeID, code)
		}
		break
	}
}

// checkFollowerRefuses sends a produce for partition 0 straight to a node
// that does not lead it: NOT_LEADER_OR_FOLLOWER, so clients refresh.
func checkFollowerRefuses(t *testing.T, addrs map[string]string, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t)
	md, err := adm.Metadata(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["ct"].Partitions[0].Leader
	var follower string
	for _, b := range md.Brokers {
		if b.NodeID != leader {
			follower = fmt.Sprintf("%s:%d", b.Host, b.Port)
			break
		}
	}
	direct := newClient(t, follower)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "ct"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testBatch(t, "to a follower")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var brokerID int32 = -1
	for _, b := range md.Brokers {
		if fmt.Sprintf("%s:%d", b.Host, b.Port) == follower {
			brokerID = b.NodeID
		}
	}
	resp, err := req.RequestWith(ctx, direct.Broker(int(brokerID)))
	if err != nil {
		t.Fatal(err)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	if !errors.Is(kerr.ErrorForCode(code), kerr.NotLeaderForPartition) {
		t.Fatalf("produce to follower %s: code %d, want NOT_LEADER_OR_FOLLOWER", follower, code)
	}
}

// checkClusterConfigs: IncrementalAlterConfigs sent to the controller (the
// metadata leader), or to another node (which passes it on to the
// controller: Kafka clients do not retry NOT_CONTROLLER), changes the
// topic on every node, as DescribeConfigs on each shows.
func checkClusterConfigs(t *testing.T, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t)
	md, err := adm.Metadata(ctx, "ct")
	if err != nil {
		t.Fatal(err)
	}
	alter := func(broker int32, value string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "ct"
		r.Configs = append(r.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.records", Value: kmsg.StringPtr(value)})
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(int(broker)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := alter(md.Controller, "7"); code != 0 {
		t.Fatalf("alter on the controller: code %d", code)
	}
	for _, b := range md.Brokers {
		if b.NodeID != md.Controller {
			if code := alter(b.NodeID, "12345"); code != 0 {
				t.Fatalf("alter on broker %d, not the controller %d: code %d", b.NodeID, md.Controller, code)
			}
		}
	}
	for _, b := range md.Brokers {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, "ct", []string{"retention.records"}
		req.Resources = append(req.Resources, r)
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil {
				t.Fatal(err)
			}
			cs := resp.Resources[0].Configs
			if len(cs) == 1 && cs[0].Value != nil && *cs[0].Value == "12345" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d describes %+v, want retention.records 12345", b.NodeID, resp.Resources[0])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkDescribeCluster: DescribeCluster lists Metadata's brokers and
// controller.
func checkDescribeCluster(t *testing.T, cl *kgo.Client, md kadm.Metadata) {
	t.Helper()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("DescribeCluster: %v %+v", err, resp)
	}
	if resp.ClusterID != clusterID || resp.ControllerID != md.Controller || len(resp.Brokers) != len(md.Brokers) {
		t.Fatalf("DescribeCluster: %+v; Metadata: controller %d, %d brokers", resp, md.Controller, len(md.Brokers))
	}
	for _, b := range resp.Brokers {
		found := false
		for _, mb := range md.Brokers {
			found = found || (mb.NodeID == b.NodeID && mb.Host == b.Host && mb.Port == b.Port)
		}
		if !found {
			t.Fatalf("DescribeCluster broker %+v, Metadata %+v", b, md.Brokers)
		}
	}
}

package kafka_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// On three nodes, a partition reassigned through a node that does not lead
// the cluster metadata (it passes the move on) gets its new replicas,
// Metadata lists them, and ListPartitionReassignments lists no move once
// the Raft voters are the new set; a preferred election through any node
// then leaves its first replica leading (ELECTION_NOT_NEEDED when it
// does already).
func TestClusterReassignAndElect(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "mvk"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "mvk")
	if err != nil {
		t.Fatal(err)
	}
	replicas := md.Topics["mvk"].Partitions[0].Replicas
	var outside, follower int32 = -1, -1
	for _, b := range md.Brokers {
		if !slices.Contains(replicas, b.NodeID) {
			outside = b.NodeID
		}
		if b.NodeID != md.Controller {
			follower = b.NodeID
		}
	}
	target := []int32{outside, replicas[0]}
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "mvk"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Replicas = target
	at.Partitions = append(at.Partitions, ap)
	alter.Topics, alter.TimeoutMillis = append(alter.Topics, at), 20000
	if resp, err := alter.RequestWith(ctx, cl.Broker(int(follower))); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("move through broker %d (controller %d): %+v %v", follower, md.Controller, resp, err)
	}
	waitFor(t, "the partition on its new replicas", func() bool {
		md, err := adm.Metadata(ctx, "mvk")
		if err != nil || !slices.Equal(md.Topics["mvk"].Partitions[0].Replicas, target) {
			return false
		}
		for _, b := range md.Brokers {
			list := kmsg.NewPtrListPartitionReassignmentsRequest()
			resp, err := list.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, "its first replica leading", func() bool {
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"mvk": {0: {}}})
		if err != nil {
			return false
		}
		if e := res["mvk"][0].Err; e != nil && !errors.Is(e, kerr.ElectionNotNeeded) {
			return false
		}
		md, err := adm.Metadata(ctx, "mvk")
		return err == nil && md.Topics["mvk"].Partitions[0].Leader == outside
	})
}

// On three nodes a client quota altered through a node that does not lead
// the cluster metadata (it passes the change on) is described by every
// node, and the partition leader throttles a produce past it.
func TestClusterClientQuotas(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "qk"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "qk")
	if err != nil {
		t.Fatal(err)
	}
	var follower int32 = -1
	for _, b := range md.Brokers {
		if b.NodeID != md.Controller {
			follower = b.NodeID
		}
	}
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: "client-id"})
	e.Ops = append(e.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: "producer_byte_rate", Value: 1024})
	alter.Entries = append(alter.Entries, e)
	if resp, err := alter.RequestWith(ctx, cl.Broker(int(follower))); err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter through broker %d (controller %d): %+v %v", follower, md.Controller, resp, err)
	}
	waitFor(t, "the quota on every node", func() bool {
		for _, b := range md.Brokers {
			resp, err := kmsg.NewPtrDescribeClientQuotasRequest().RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil || resp.ErrorCode != 0 || len(resp.Entries) != 1 {
				return false
			}
		}
		return true
	})
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "qk"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, string(make([]byte, 3<<10)))
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	waitFor(t, "a produce to the partition's leader", func() bool {
		md, err := adm.Metadata(ctx, "qk")
		if err != nil {
			return false
		}
		resp, err := produce.RequestWith(ctx, cl.Broker(int(md.Topics["qk"].Partitions[0].Leader)))
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return false
		}
		// 3 KiB at 1 KiB/s is past the second of burst a quota allows.
		if resp.ThrottleMillis <= 0 {
			t.Fatalf("a produce past the quota: throttle %d ms", resp.ThrottleMillis)
		}
		return true
	})
}

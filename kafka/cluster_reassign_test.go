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

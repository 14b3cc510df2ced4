package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
)

// TestAddPartitionsSingleNode: the new partitions take produces, bad
// counts are refused with the current count in the message, and a group
// subscribed to the topic rebalances onto the new partitions.
func TestAddPartitionsSingleNode(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	c, err := b.Coordinator()
	if err != nil {
		t.Fatal(err)
	}
	join := groups.JoinRequest{Group: "g", ClientID: "test", SessionTimeout: 30 * time.Second,
		ProtocolType: groups.ConsumerProtocolType, ServerAssign: true,
		Protocols: []groups.Protocol{{Name: groups.CooperativeStickyAssignorName,
			Metadata: groups.EncodeSubscription(groups.Subscription{Topics: []string{"t"}, Generation: -1})}}}
	res, err := c.JoinGroup(ctx, join)
	if err != nil {
		t.Fatal(err)
	}
	if got := syncCount(t, c, res); got != 2 {
		t.Fatalf("assigned %d partitions before the add, want 2", got)
	}

	for _, n := range []int32{0, 1, 2, -3} {
		_, err := b.AddPartitions(ctx, "", "t", n)
		if !errors.Is(err, partition.ErrInvalidConfig) || !strings.Contains(err.Error(), "has 2 partitions") {
			t.Errorf("AddPartitions(t, %d) = %v, want ErrInvalidConfig naming the current count", n, err)
		}
	}
	if _, err := b.AddPartitions(ctx, "", "nope", 3); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v, want ErrUnknownTopic", err)
	}
	if _, err := b.AddPartitions(ctx, "", "bad name/", 3); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Errorf("bad name: %v, want kind.ErrInvalidArgument", err)
	}
	if err := c.Heartbeat("g", res.MemberID, res.Generation); err != nil {
		t.Fatalf("a refused add disturbed the group: %v", err)
	}

	cfg, err := b.AddPartitions(ctx, "", "t", 5)
	if err != nil || cfg.Partitions != 5 {
		t.Fatalf("AddPartitions(t, 5) = %+v, %v", cfg, err)
	}
	if n, _ := b.PartitionCount(ctx, "", "t"); n != 5 {
		t.Fatalf("PartitionCount %d after the add, want 5", n)
	}
	pr, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Partition: 4, Batch: records("a", "b")})
	if err != nil || pr.BaseOffset != 0 {
		t.Fatalf("produce to new partition 4: %+v, %v", pr, err)
	}
	if err := c.Heartbeat("g", res.MemberID, res.Generation); !errors.Is(err, groups.ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after the add: %v, want ErrRebalanceInProgress", err)
	}
	join.MemberID = res.MemberID
	res, err = c.JoinGroup(ctx, join)
	if err != nil {
		t.Fatal(err)
	}
	if got := syncCount(t, c, res); got != 5 {
		t.Fatalf("assigned %d partitions after the add, want 5", got)
	}
}

func syncCount(t *testing.T, c *groups.Coordinator, res groups.JoinResult) int {
	t.Helper()
	out, err := c.SyncGroup(context.Background(), groups.SyncRequest{Group: "g", MemberID: res.MemberID, Generation: res.Generation})
	if err != nil {
		t.Fatal(err)
	}
	tps, err := groups.DecodeAssignment(out.Assignment)
	if err != nil {
		t.Fatal(err)
	}
	return len(tps)
}

// Deleting a topic rebalances the groups subscribed to it, so their
// members stop reading it.
func TestDeleteTopicRebalancesItsGroups(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	c, err := b.Coordinator()
	if err != nil {
		t.Fatal(err)
	}
	join := groups.JoinRequest{Group: "g", ClientID: "test", SessionTimeout: 30 * time.Second,
		ProtocolType: groups.ConsumerProtocolType, ServerAssign: true,
		Protocols: []groups.Protocol{{Name: groups.CooperativeStickyAssignorName,
			Metadata: groups.EncodeSubscription(groups.Subscription{Topics: []string{"t"}, Generation: -1})}}}
	res, err := c.JoinGroup(ctx, join)
	if err != nil {
		t.Fatal(err)
	}
	syncCount(t, c, res)
	if err := b.DeleteTopic(ctx, "", "t"); err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat("g", res.MemberID, res.Generation); !errors.Is(err, groups.ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after the delete: %v, want ErrRebalanceInProgress", err)
	}
	join.MemberID = res.MemberID
	if res, err = c.JoinGroup(ctx, join); err != nil {
		t.Fatal(err)
	}
	if got := syncCount(t, c, res); got != 0 {
		t.Fatalf("assigned %d partitions of a deleted topic", got)
	}
}

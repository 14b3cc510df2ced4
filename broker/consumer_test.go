package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// beat is one heartbeat that must succeed.
func beat(t *testing.T, b *broker.Broker, r broker.ConsumerHeartbeatRequest) broker.ConsumerHeartbeatResult {
	t.Helper()
	r.Group, r.RebalanceTimeout = "cg", -1
	res, err := b.ConsumerHeartbeat(context.Background(), r)
	if err != nil || res.Code != broker.ConsumerOK {
		t.Fatalf("heartbeat of %s at epoch %d: %v, code %d %s", r.Member, r.MemberEpoch, err, res.Code, res.Message)
	}
	return res
}

func partitionsOf(a []broker.ConsumerTopicPartitions) []int32 {
	var out []int32
	for _, t := range a {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	return out
}

// A second member's join moves partitions from the first only after the
// first reported them revoked; the member epochs move with the target.
func TestConsumerGroupRevokesBeforeAssigning(t *testing.T) {
	b := open(t)
	createTopic(t, b, "q", 4)
	a := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}})
	if got := partitionsOf(a.Assignment); len(got) != 4 || a.MemberEpoch < 1 {
		t.Fatalf("a alone: %v at epoch %d, want all 4 partitions", got, a.MemberEpoch)
	}
	owned := func(r broker.ConsumerHeartbeatResult) []broker.ConsumerTopicPartitions {
		return []broker.ConsumerTopicPartitions{{TopicID: r.Assignment[0].TopicID, Partitions: partitionsOf(r.Assignment)}}
	}
	aOwned := owned(a)
	bb := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", Topics: []string{"q"}})
	if got := partitionsOf(bb.Assignment); len(got) != 0 {
		t.Fatalf("b got %v while a still owns every partition", got)
	}
	a2 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: aOwned})
	if got := partitionsOf(a2.Assignment); len(got) != 2 || a2.MemberEpoch != a.MemberEpoch {
		t.Fatalf("a told %v at epoch %d, want 2 partitions kept at epoch %d", got, a2.MemberEpoch, a.MemberEpoch)
	}
	b2 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: bb.MemberEpoch, Owned: []broker.ConsumerTopicPartitions{}})
	if got := partitionsOf(b2.Assignment); len(got) != 0 {
		t.Fatalf("b got %v before a reported its revocation", got)
	}
	a3 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a2.MemberEpoch, Owned: owned(a2)})
	if a3.MemberEpoch <= a.MemberEpoch {
		t.Fatalf("a's epoch after its revocation: %d, want above %d", a3.MemberEpoch, a.MemberEpoch)
	}
	b3 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: b2.MemberEpoch, Owned: []broker.ConsumerTopicPartitions{}})
	both := append(partitionsOf(a2.Assignment), partitionsOf(b3.Assignment)...)
	slices.Sort(both)
	if !slices.Equal(both, []int32{0, 1, 2, 3}) || b3.MemberEpoch != a3.MemberEpoch {
		t.Fatalf("a %v, b %v at epochs %d/%d: want the 4 partitions split, one epoch", a2.Assignment, b3.Assignment, a3.MemberEpoch, b3.MemberEpoch)
	}
	d, err := b.DescribeConsumerGroup(context.Background(), "", "cg")
	if err != nil || d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v, %v", d, err)
	}
}

// Offset commits of a consumer group's members are fenced by member epoch.
func TestConsumerGroupCommitFencing(t *testing.T) {
	b := open(t)
	createTopic(t, b, "q", 1)
	a := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}})
	ctx := context.Background()
	cs := []offsets.Committed{{Topic: "q", Partition: 0, Offset: 0}}
	if err := b.CommitOffsets(ctx, "", "cg", "a", a.MemberEpoch, cs); err != nil {
		t.Fatalf("commit at the member's epoch: %v", err)
	}
	if err := b.CommitOffsets(ctx, "", "cg", "a", a.MemberEpoch+5, cs); !errors.Is(err, broker.ErrStaleMemberEpoch) {
		t.Fatalf("commit at a later epoch: %v, want ErrStaleMemberEpoch", err)
	}
	if err := b.CommitOffsets(ctx, "", "cg", "nobody", a.MemberEpoch, cs); !errors.Is(err, groups.ErrUnknownMember) {
		t.Fatalf("commit of an unknown member: %v, want ErrUnknownMember", err)
	}
	if err := b.CommitOffsets(ctx, "", "cg", "", -1, cs); !errors.Is(err, groups.ErrUnknownMember) {
		t.Fatalf("a commit naming no member while the group has members: %v", err)
	}
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: -1})
	if err := b.CommitOffsets(ctx, "", "cg", "", -1, cs); err != nil {
		t.Fatalf("a commit naming no member once the group is empty: %v", err)
	}
}

// The range assignor gives each member a contiguous range; a static
// member that left with -2 is taken over by a new member id with its
// instance id, keeping its partitions and epoch, while an active
// instance id is refused.
func TestConsumerGroupRangeAndStatic(t *testing.T) {
	b := open(t)
	createTopic(t, b, "q", 4)
	rng, inst := "range", "i1"
	a := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}, Assignor: &rng, InstanceID: &inst})
	all := []broker.ConsumerTopicPartitions{{TopicID: a.Assignment[0].TopicID, Partitions: partitionsOf(a.Assignment)}}
	bb := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", Topics: []string{"q"}, Assignor: &rng})
	a2 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: all})
	if got := partitionsOf(a2.Assignment); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("range: a keeps %v, want [0 1]", got)
	}
	kept := []broker.ConsumerTopicPartitions{{TopicID: all[0].TopicID, Partitions: []int32{0, 1}}}
	a3 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a2.MemberEpoch, Owned: kept})
	if b3 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: bb.MemberEpoch, Owned: []broker.ConsumerTopicPartitions{}}); !slices.Equal(partitionsOf(b3.Assignment), []int32{2, 3}) {
		t.Fatalf("range: b gets %v, want [2 3]", b3.Assignment)
	}
	res, err := b.ConsumerHeartbeat(context.Background(), broker.ConsumerHeartbeatRequest{Group: "cg", Member: "c", Topics: []string{"q"}, InstanceID: &inst})
	if err != nil || res.Code != broker.ConsumerUnreleasedInstance {
		t.Fatalf("a join with an active instance id: code %d, %v; want ConsumerUnreleasedInstance", res.Code, err)
	}
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: -2})
	c := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "c", Topics: []string{"q"}, InstanceID: &inst, Owned: []broker.ConsumerTopicPartitions{}})
	if !slices.Equal(partitionsOf(c.Assignment), []int32{0, 1}) || c.MemberEpoch != a3.MemberEpoch {
		t.Fatalf("the instance's new member got %v at epoch %d, want [0 1] at epoch %d", c.Assignment, c.MemberEpoch, a3.MemberEpoch)
	}
}

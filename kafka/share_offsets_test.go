package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeShareOffsets(t *testing.T, cl *kgo.Client, group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID, g.Topics = group, topics
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("describe share group offsets: %v %v", resp, err)
	}
	return resp.Groups[0]
}

// checkShareOffsets: group g read and accepted every record of q/0
// (offsets 0..2): DescribeShareGroupOffsets answers its start offset 3,
// for null topics and for the partition named; a partition of q that
// does not exist is UNKNOWN_TOPIC_OR_PARTITION; mallory (read on g only)
// is refused the topic, and another group.
func checkShareOffsets(t *testing.T, admin, mallory *kgo.Client) {
	t.Helper()
	all := describeShareOffsets(t, admin, "g", nil)
	named := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	named.Topic, named.Partitions = "q", []int32{0, 7}
	one := describeShareOffsets(t, admin, "g", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{named})
	for _, g := range []kmsg.DescribeShareGroupOffsetsResponseGroup{all, one} {
		if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Topic != "q" || g.Topics[0].TopicID == [16]byte{} {
			t.Fatalf("describe share group offsets: %+v", g)
		}
		if p := g.Topics[0].Partitions[0]; p.Partition != 0 || p.StartOffset != 3 || p.ErrorCode != 0 {
			t.Fatalf("q/0: %+v, want start offset 3", p)
		}
	}
	if ps := one.Topics[0].Partitions; len(ps) != 2 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("q/7: %+v, want UNKNOWN_TOPIC_OR_PARTITION", ps)
	}
	m := describeShareOffsets(t, mallory, "g", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{named})
	if m.ErrorCode != 0 || len(m.Topics) != 1 || m.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's describe of q: %+v, want TOPIC_AUTHORIZATION_FAILED", m)
	}
	if m := describeShareOffsets(t, mallory, "other", nil); m.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("mallory's describe of another group: %+v, want GROUP_AUTHORIZATION_FAILED", m)
	}
}

func alterShareOffset(t *testing.T, cl *kgo.Client, topic string, part int32, offset int64) (group, partition int16) {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = "g"
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	rp.Partition, rp.StartOffset = part, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, 0
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("alter share group offsets: %+v", resp)
	}
	return 0, resp.Topics[0].Partitions[0].ErrorCode
}

// checkAlterShareOffsets: g, whose member member still belongs to it, has
// accepted q/0 up to 3. AlterShareGroupOffsets refuses a group with
// members, then (the member gone) moves the start back to 1: a new member
// gets 1 and 2 again, first deliveries; an offset above the high
// watermark and mallory (no read on q) are refused.
func checkAlterShareOffsets(t *testing.T, addr string, admin, mallory, member *kgo.Client, opt kgo.Opt) {
	t.Helper()
	if g, _ := alterShareOffset(t, admin, "q", 0, 1); g != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(g))
	}
	member.Close() // leaves the group
	if g, p := alterShareOffset(t, admin, "q", 0, 99); g != 0 || p != kerr.OffsetOutOfRange.Code {
		t.Fatalf("alter above the high watermark: %v %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	if g, p := alterShareOffset(t, mallory, "q", 0, 1); g != 0 || p != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's alter: %v %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	if g, p := alterShareOffset(t, admin, "q", 0, 1); g != 0 || p != 0 {
		t.Fatalf("alter: %v %v", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	if d := describeShareOffsets(t, admin, "g", nil); d.Topics[0].Partitions[0].StartOffset != 1 {
		t.Fatalf("after the alter: %+v, want start offset 1", d)
	}
	cl := shareClient(t, addr, "q", "g", opt)
	ctx := testCtx(t)
	seen := map[int64]int32{}
	for len(seen) < 2 && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			seen[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != 2 || seen[1] != 1 || seen[2] != 1 {
		t.Fatalf("after the alter the group got %v, want offsets 1 and 2 delivered once", seen)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	checkDeleteShareOffsets(t, admin, mallory, cl)
}

// deleteShareOffsets sends DeleteShareGroupOffsets of group g for topic
// through cl: the group's code and the topic's.
func deleteShareOffsets(t *testing.T, cl *kgo.Client, topic string) (int16, int16) {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = "g"
	rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, 0
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic {
		t.Fatalf("DeleteShareGroupOffsets answered %+v", resp.Topics)
	}
	return 0, resp.Topics[0].ErrorCode
}

// DeleteShareGroupOffsets of a group whose share partition q/0 moved to
// 3 (everything accepted): refused while member is in the group and to a
// principal without delete on the group; then the partition starts again
// where share.auto.offset.reset (earliest) says, at 0.
func checkDeleteShareOffsets(t *testing.T, admin, mallory, member *kgo.Client) {
	t.Helper()
	if d := describeShareOffsets(t, admin, "g", nil); d.Topics[0].Partitions[0].StartOffset != 3 {
		t.Fatalf("before the delete: %+v, want start offset 3", d)
	}
	if g, _ := deleteShareOffsets(t, admin, "q"); g != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(g))
	}
	member.Close()
	if g, _ := deleteShareOffsets(t, mallory, "q"); g != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("mallory's delete (read on the group only): %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(g))
	}
	if g, p := deleteShareOffsets(t, admin, "missing"); g != 0 || p != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete of a topic that does not exist: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	if g, p := deleteShareOffsets(t, admin, "q"); g != 0 || p != 0 {
		t.Fatalf("delete: %v %v", kerr.ErrorForCode(g), kerr.ErrorForCode(p))
	}
	if d := describeShareOffsets(t, admin, "g", nil); d.Topics[0].Partitions[0].StartOffset != 0 {
		t.Fatalf("after the delete: %+v, want start offset 0 (earliest)", d)
	}
}

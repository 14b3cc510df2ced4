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

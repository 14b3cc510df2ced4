package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// staleViewCore is a node whose view of a partition names itself leader
// at epoch 3 (a replica asleep since a restart) while its EpochEnd, which
// proves the leadership first, answers what the core says.
type staleViewCore struct {
	*fakeCore
	epochEnd func(epoch int32) (int32, int64, error)
}

func (c *staleViewCore) Topic(ctx context.Context, p Principal, name string) (TopicInfo, error) {
	ti, err := c.fakeCore.Topic(ctx, p, name)
	for i := range ti.Partitions {
		ti.Partitions[i].LeaderEpoch = 3
	}
	return ti, err
}

func (c *staleViewCore) EpochEnd(_ context.Context, _ Principal, _ string, _ int32, epoch int32) (int32, int64, error) {
	return c.epochEnd(epoch)
}

// An epoch newer than the node's view is not answered UNDEFINED from the
// view: franz-go takes UNDEFINED after it consumed for a lost log and
// goes back to its reset offset. The core proves the leadership and
// answers: not the leader, the epoch's end, or UNDEFINED when the proven
// leader's log holds no such epoch.
func TestOffsetForLeaderEpochNewerThanTheView(t *testing.T) {
	core := &staleViewCore{fakeCore: newFakeCore()}
	if _, err := core.CreateTopic(context.Background(), "", broker.DefaultConfig("t")); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, core, Config{})
	cl := newClient(t, s.Addr().String())
	ask := func(current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// To the node itself: the client would retry a refusal elsewhere.
		resp, err := cl.Broker(1).Request(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}

	core.epochEnd = func(int32) (int32, int64, error) {
		return 0, 0, &broker.NotLeaderError{What: "partition t/0", Leader: broker.Node{ID: "n2"}}
	}
	if p := ask(3, 5); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("another node leads: error %d, epoch %d, end %d; want NOT_LEADER_OR_FOLLOWER", p.ErrorCode, p.LeaderEpoch, p.EndOffset)
	}
	core.epochEnd = func(epoch int32) (int32, int64, error) { return 5, 120, nil }
	if p := ask(3, 5); p.ErrorCode != 0 || p.LeaderEpoch != 5 || p.EndOffset != 120 {
		t.Fatalf("the log holds epoch 5: error %d, epoch %d, end %d; want 5, 120", p.ErrorCode, p.LeaderEpoch, p.EndOffset)
	}
	core.epochEnd = func(epoch int32) (int32, int64, error) { return 3, 120, nil }
	if p := ask(-1, 5); p.ErrorCode != 0 || p.LeaderEpoch != -1 || p.EndOffset != -1 {
		t.Fatalf("no epoch 5 in the log: error %d, epoch %d, end %d; want UNDEFINED (-1, -1)", p.ErrorCode, p.LeaderEpoch, p.EndOffset)
	}
	if p := ask(3, 2); p.ErrorCode != 0 || p.LeaderEpoch != 3 || p.EndOffset != 120 {
		t.Fatalf("an older epoch: error %d, epoch %d, end %d; want 3, 120", p.ErrorCode, p.LeaderEpoch, p.EndOffset)
	}
}

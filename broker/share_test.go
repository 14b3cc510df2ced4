package broker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/share"
)

func shareBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b := open(t)
	createTopic(t, b, "q", 2)
	produceTo(t, b, "q", 0, "a", "b", "c")
	if err := b.SetShareGroupConfig(context.Background(), "", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	return b
}

func shareFetch(t *testing.T, b *broker.Broker, member string, epoch int32, acks ...broker.ShareAck) broker.ShareFetchResult {
	t.Helper()
	res, err := b.ShareFetch(context.Background(), broker.ShareFetchRequest{Group: "g", Member: member, SessionEpoch: epoch,
		MaxRecords: 10, Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q", Partition: 0}, Acks: acks}}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func acquired(res broker.ShareFetchResult) []broker.ShareRange {
	var out []broker.ShareRange
	for _, p := range res.Partitions {
		out = append(out, p.Acquired...)
	}
	return out
}

func TestShareSessionEpochs(t *testing.T) {
	b := shareBroker(t)
	if res := shareFetch(t, b, "m", 1); res.Code != broker.ShareSessionNotFound {
		t.Fatalf("epoch 1 without a session: %v", res.Code)
	}
	res := shareFetch(t, b, "m", 0)
	if res.Code != broker.ShareOK || len(acquired(res)) != 1 || acquired(res)[0] != (broker.ShareRange{First: 0, Last: 2, DeliveryCount: 1}) {
		t.Fatalf("epoch 0: %+v", res)
	}
	if res := shareFetch(t, b, "m", 2); res.Code != broker.ShareInvalidSessionEpoch {
		t.Fatalf("epoch 2 after 0: %v", res.Code)
	}
	// A rejected epoch changed nothing: 1 is still next.
	res = shareFetch(t, b, "m", 1, broker.ShareAck{First: 0, Last: 2, Types: []broker.ShareAckType{1, 2, 3}})
	if res.Code != broker.ShareOK || res.Partitions[0].AckCode != broker.ShareOK || res.Partitions[0].AckErr != nil {
		t.Fatalf("epoch 1 with acks: %+v", res)
	}
	// 1 was released and is acquired again by the same fetch.
	if got := acquired(res); len(got) != 1 || got[0] != (broker.ShareRange{First: 1, Last: 1, DeliveryCount: 2}) {
		t.Fatalf("after release: %+v", got)
	}
}

func TestShareAcknowledgeNotHeld(t *testing.T) {
	b := shareBroker(t)
	shareFetch(t, b, "m1", 0)
	shareFetch(t, b, "m2", 0)
	res, err := b.ShareAcknowledge(context.Background(), broker.ShareFetchRequest{Group: "g", Member: "m2", SessionEpoch: 1,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"}, Acks: []broker.ShareAck{{First: 0, Last: 0, Types: []broker.ShareAckType{1}}}}}})
	if err != nil || res.Partitions[0].AckCode != broker.ShareInvalidRecordState {
		t.Fatalf("m2 accepts m1's record: %+v, %v", res, err)
	}
	// m1 leaves: its records go to m2 at once.
	if _, err := b.ShareHeartbeat(context.Background(), broker.ShareHeartbeatRequest{Group: "g", Member: "m1", MemberEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	if got := acquired(shareFetch(t, b, "m2", 2)); len(got) != 1 || got[0] != (broker.ShareRange{First: 0, Last: 2, DeliveryCount: 2}) {
		t.Fatalf("after m1 left: %+v", got)
	}
}

func TestShareHeartbeat(t *testing.T) {
	b := shareBroker(t)
	ctx := context.Background()
	hb := func(member string, epoch int32, topics []string) broker.ShareHeartbeatResult {
		t.Helper()
		res, err := b.ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Group: "g", Member: member, MemberEpoch: epoch, Topics: topics})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := hb("m", 3, nil); res.Code != broker.ShareUnknownMember {
		t.Fatalf("unknown member: %v", res.Code)
	}
	res := hb("m", 0, []string{"q", "missing"})
	if res.Code != broker.ShareOK || len(res.Assignment) != 1 || len(res.Assignment[0].Partitions) != 2 || res.MemberEpoch <= 0 {
		t.Fatalf("join: %+v", res)
	}
	other := hb("o", 0, []string{"q"})
	if other.Assignment == nil || len(other.Assignment[0].Partitions) != 2 {
		t.Fatalf("a second member gets every partition too: %+v", other)
	}
	again := hb("m", res.MemberEpoch, nil)
	if again.Code != broker.ShareOK || again.Assignment != nil || again.MemberEpoch != res.MemberEpoch {
		t.Fatalf("steady heartbeat: %+v", again)
	}
	if res := hb("m", res.MemberEpoch+100, nil); res.Code != broker.ShareFencedMemberEpoch {
		t.Fatalf("a wrong epoch: %v", res.Code)
	}
	d, err := b.DescribeShareGroup(ctx, "", "g")
	if err != nil || d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v, %v", d, err)
	}
}

// In a cluster a share partition's state is served by the partition's
// leader and kept in the partition's Raft log: on a one-node cluster a
// member acquires, releases and accepts, and the replica's state machine
// holds the state the answers depended on.
func TestShareInOneNodeCluster(t *testing.T) {
	b := openOneNodeCluster(t)
	ctx := context.Background()
	createTopic(t, b, "q", 1)
	produceTo(t, b, "q", 0, "a", "b", "c")
	if err := b.SetShareGroupConfig(ctx, "", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	hb, err := b.ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Group: "g", Member: "m", Topics: []string{"q"}})
	if err != nil || hb.Code != broker.ShareOK || len(hb.Assignment) != 1 {
		t.Fatalf("heartbeat in a cluster: %+v, %v", hb, err)
	}
	if got := acquired(shareFetch(t, b, "m", 0)); len(got) != 1 || got[0] != (broker.ShareRange{First: 0, Last: 2, DeliveryCount: 1}) {
		t.Fatalf("first fetch: %+v", got)
	}
	res := shareFetch(t, b, "m", 1, broker.ShareAck{First: 0, Last: 1, Types: []broker.ShareAckType{1, 2}})
	if res.Partitions[0].AckCode != broker.ShareOK || res.Partitions[0].AckErr != nil {
		t.Fatalf("acknowledge: %+v", res)
	}
	if got := acquired(res); len(got) != 1 || got[0] != (broker.ShareRange{First: 1, Last: 1, DeliveryCount: 2}) {
		t.Fatalf("after release: %+v", got)
	}
	cfgs, err := b.TopicConfigs(ctx, "")
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("topics: %v %v", cfgs, err)
	}
	rep := b.Cluster().LocalReplica(meta.GroupOf(cfgs[0], 0))
	st, ok := rep.ShareState("g")
	if !ok {
		t.Fatal("no share state in the partition's state machine")
	}
	p, err := share.Decode(st.State, share.Config{})
	if err != nil || p.Start() != 1 || p.End() != 3 {
		t.Fatalf("replicated state: %+v, %v", p, err)
	}
}

// A fetch with nothing to acquire waits, and wakes when another member
// releases a record.
func TestShareFetchWakesOnRelease(t *testing.T) {
	b := shareBroker(t)
	shareFetch(t, b, "m1", 0) // holds 0..2
	done := make(chan broker.ShareFetchResult, 1)
	go func() {
		res, _ := b.ShareFetch(context.Background(), broker.ShareFetchRequest{Group: "g", Member: "m2", MaxWait: 20 * time.Second, MaxRecords: 10,
			Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q", Partition: 0}}}})
		done <- res
	}()
	// Released while m2 waits, or before it started: either way m2 gets it.
	ack, err := b.ShareAcknowledge(context.Background(), broker.ShareFetchRequest{Group: "g", Member: "m1", SessionEpoch: 1,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"}, Acks: []broker.ShareAck{{First: 1, Last: 1, Types: []broker.ShareAckType{2}}}}}})
	if err != nil || ack.Partitions[0].AckCode != broker.ShareOK {
		t.Fatalf("release: %+v, %v", ack, err)
	}
	res := <-done
	if got := acquired(res); len(got) != 1 || got[0].First != 1 || got[0].Last != 1 {
		t.Fatalf("m2 got %+v", got)
	}
}

// A released record waits out its redelivery backoff (the group's
// share.redelivery.backoff.* configs, the draw injected): the fetch that
// carries the release does not get it back, and a fetch waiting gets it
// once the backoff is over.
func TestShareRedeliveryBackoff(t *testing.T) {
	b := shareBroker(t)
	var draw atomic.Int64
	draw.Store(-1) // the ceiling
	broker.SetShareJitter(b, func(n int64) int64 {
		if d := draw.Load(); d >= 0 {
			return d
		}
		return n
	})
	if err := b.SetShareGroupConfig(context.Background(), "", "g", map[string]string{
		"share.redelivery.backoff.base.ms": "3600000", "share.redelivery.backoff.max.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	shareFetch(t, b, "m", 0) // 0..2
	res := shareFetch(t, b, "m", 1, broker.ShareAck{First: 1, Last: 1, Types: []broker.ShareAckType{2}})
	if res.Partitions[0].AckCode != broker.ShareOK || len(acquired(res)) != 0 {
		t.Fatalf("release with an hour's backoff: %+v, want nothing acquired", res)
	}
	d, err := b.DescribeShareGroup(context.Background(), "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Available != 1 || d.Partitions[0].Acquired != 2 {
		t.Fatalf("describe during the backoff: %+v, %v", d, err)
	}
	draw.Store(50)
	res = shareFetch(t, b, "m", 2, broker.ShareAck{First: 2, Last: 2, Types: []broker.ShareAckType{2}})
	if got := acquired(res); len(got) != 0 {
		t.Fatalf("acquired %+v at once", got)
	}
	res, err = b.ShareFetch(context.Background(), broker.ShareFetchRequest{Group: "g", Member: "m", SessionEpoch: 3, MaxWait: 20 * time.Second,
		MaxRecords: 10, Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q", Partition: 0}}}})
	if got := acquired(res); err != nil || len(got) != 1 || got[0] != (broker.ShareRange{First: 2, Last: 2, DeliveryCount: 2}) {
		t.Fatalf("after a 50 ms backoff: %+v, %v; want offset 2 again", got, err)
	}
	if err := b.SetShareGroupConfig(context.Background(), "", "g", map[string]string{"share.redelivery.backoff.max.ms": "0"}); err == nil {
		t.Fatal("share.redelivery.backoff.max.ms=0 accepted")
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// appendTo appends n records to partition id of topic through its leader.
func (h *harness) appendTo(topic string, id int32, n int) {
	h.t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i].Value = []byte(fmt.Sprint(i))
	}
	l := h.partitionLeader(topic, id)
	r, err := l.cl().Replica(context.Background(), localPartition(l, topic, id))
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := r.Append(context.Background(), batch.Encode(nil, 0, batch.NoProducer, recs)); err != nil {
		h.t.Fatal(err)
	}
}

// A partition is served by its leader only: a node without a replica
// sends the request to the placement's first replica, a follower to the
// leader; list offsets asked of either is answered by the leader (through
// Peers), and asked again of a node that was forwarded to, is not
// forwarded again.
func TestPartitionRouting(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.createTopic(topicConfig("r", 1, 2))
	st := h.metaLeader().cl().State()
	set := st.Topics["r"].Replicas[0]
	var outside *testNode
	for _, nd := range h.all() {
		if !slices.Contains(set, nd.id) {
			outside = nd
		}
	}
	h.waitLocal(st.Topics["r"].Config)
	leader := h.partitionLeader("r", 0)
	h.appendTo("r", 0, 3)
	ctx := context.Background()

	p := localPartition(outside, "r", 0)
	var nl *NotLeaderError
	if _, err := outside.cl().Replica(ctx, p); !errors.As(err, &nl) || !nl.Untouched || nl.Leader.ID != set[0] {
		t.Fatalf("Replica on %s, which has none: %v, want NotLeaderError naming the preferred replica %s", outside.id, err, set[0])
	}
	for _, nd := range h.all() {
		p := localPartition(nd, "r", 0)
		if got := nd.cl().Leads(ctx, p); got != (nd == leader) {
			t.Errorf("%s: Leads = %v; the leader is %s", nd.id, got, leader.id)
		}
		po, err := nd.cl().ListOffset(ctx, p, Latest)
		switch {
		case nd == leader && (err != nil || po != nil):
			t.Errorf("list offsets on the leader: %+v, %v: want nil, nil (answered from its own log)", po, err)
		case nd != leader && (err != nil || po == nil || po.HighWatermark != 3 || po.LogStart != 0):
			t.Errorf("list offsets on %s: %+v, %v: want the leader's high watermark 3", nd.id, po, err)
		}
		pl, err := nd.cl().PartitionLog(ctx, p)
		if err != nil || pl.HighWatermark() != 3 || pl.StartOffset() != 0 {
			t.Errorf("%s: partition log %v: %v", nd.id, pl, err)
		}
		if nd != leader {
			if _, err := nd.cl().ListOffset(WithForwarded(ctx), p, Latest); !errors.As(err, &nl) {
				t.Errorf("forwarded list offsets on %s, not the leader: %v, want NotLeaderError", nd.id, err)
			}
		}
	}
}

// A partition's leader cut off from its followers cannot prove a read
// current (Linearizable fails rather than answer from what may be stale);
// once healed, the group's leader proves reads again. So for the
// metadata group.
func TestLinearizableCutOffLeader(t *testing.T) {
	h := newHarness(t, 3, nil)
	cfg := h.createTopic(topicConfig("lin", 1, 3))
	h.waitLocal(cfg)
	l := h.partitionLeader("lin", 0)
	r := l.cl().LocalReplica(meta.GroupOf(cfg, 0))
	ctx := context.Background()
	if err := l.cl().Linearizable(ctx, r, "partition lin/0"); err != nil {
		t.Fatalf("a leader with its followers: %v", err)
	}
	ml := h.metaLeader()
	if err := ml.cl().MetaLinearizable(ctx); err != nil {
		t.Fatalf("the metadata leader with its followers: %v", err)
	}
	h.isolate(l.id)
	if ml != l {
		h.isolate(ml.id)
	}
	cctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if err := l.cl().Linearizable(cctx, r, "partition lin/0"); err == nil {
		t.Fatal("a partition leader cut off from its followers confirmed a read")
	}
	if err := ml.cl().MetaLinearizable(cctx); err == nil {
		t.Fatal("a metadata leader cut off from the others confirmed a read")
	}
	h.heal()
	h.eventually("the leaders confirm reads after the heal", func() (bool, string) {
		nl := h.partitionLeader("lin", 0)
		err1 := nl.cl().Linearizable(ctx, nl.cl().LocalReplica(meta.GroupOf(cfg, 0)), "partition lin/0")
		err2 := h.metaLeader().cl().MetaLinearizable(ctx)
		return err1 == nil && err2 == nil, fmt.Sprint(err1, err2)
	})
}

// A node asked for a topic it does not have sends the client to the
// metadata leader (it may only be behind), unless the request was
// forwarded to it; only the metadata leader says the topic does not
// exist. A topic the metadata has and the node has not made yet is
// "retry".
func TestTopicLookup(t *testing.T) {
	h := newHarness(t, 3, nil)
	leader := h.metaLeader()
	f := h.followerOf(leader).cl()
	ctx := context.Background()
	notFound := fmt.Errorf("%w: %q", partition.ErrTopicNotFound, "ghost")
	var nl *NotLeaderError
	if err := f.TopicLookup(ctx, "ghost", notFound); !errors.As(err, &nl) || nl.Leader.ID != leader.id {
		t.Fatalf("lookup on a follower: %v, want NotLeaderError naming %s", err, leader.id)
	}
	if err := f.TopicLookup(WithForwarded(ctx), "ghost", notFound); !errors.As(err, &nl) || nl.Leader.ID != "" || !errors.Is(err, kind.ErrNoLeader) {
		t.Fatalf("forwarded lookup on a follower: %v, want NotLeaderError naming no one", err)
	}
	if err := leader.cl().TopicLookup(ctx, "ghost", notFound); !errors.Is(err, partition.ErrTopicNotFound) {
		t.Fatalf("lookup on the metadata leader: %v, want ErrTopicNotFound", err)
	}
	other := errors.New("disk on fire")
	if err := f.TopicLookup(ctx, "ghost", other); err != other {
		t.Fatalf("lookup passed %v on as %v", other, err)
	}
	if _, err := leader.cl().Replica(ctx, &partition.Partition{Topic: "ghost"}); !errors.Is(err, partition.ErrTopicNotFound) {
		t.Fatalf("Replica of a topic nobody has, on the metadata leader: %v", err)
	}

	cfg := h.createTopic(topicConfig("known", 2, 3))
	for _, nd := range h.all() {
		if err := nd.cl().AwaitTopic(ctx, "known", 2); err != nil {
			t.Errorf("%s: AwaitTopic: %v", nd.id, err)
		}
		if err := nd.cl().TopicLookup(ctx, "known", notFound); !errors.Is(err, kind.ErrUnavailable) {
			t.Errorf("%s: lookup of a topic the metadata has: %v, want ErrUnavailable (retry)", nd.id, err)
		}
	}
	h.waitLocal(cfg)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := f.AwaitTopic(short, "known", 3); !errors.Is(err, kind.ErrUnavailable) {
		t.Fatalf("AwaitTopic of a partition count never reached: %v, want ErrUnavailable", err)
	}
}

package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// A member reached through GroupMember joins, syncs, heartbeats and
// commits in its generation, on the group it was made for whatever its
// requests name; a stale generation is refused, and after it leaves it is
// unknown. The same on both control planes.
func TestGroupMemberLifecycle(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			createTopic(t, b, "t", 1)
			produceTo(t, b, "t", 0, "a", "b")
			m, err := b.GroupMember(ctx, "", "g")
			if err != nil {
				t.Fatal(err)
			}
			j, err := m.Join(ctx, groups.JoinRequest{Group: "other", SessionTimeout: 30 * time.Second,
				ProtocolType: groups.ConsumerProtocolType, Protocols: []groups.Protocol{{Name: "range", Metadata: []byte("m")}}})
			if err != nil || j.MemberID == "" || j.Leader != j.MemberID {
				t.Fatalf("join: %+v %v, want a member that leads", j, err)
			}
			if _, err := m.Sync(ctx, groups.SyncRequest{Group: "other", MemberID: j.MemberID, Generation: j.Generation,
				Assignments: map[string][]byte{j.MemberID: []byte("all")}}); err != nil {
				t.Fatalf("sync: %v", err)
			}
			d, err := b.DescribeGroup(ctx, "", "g")
			if err != nil || len(d.Members) != 1 || d.Generation != j.Generation {
				t.Fatalf("describe g: %+v %v, want the member (the request's group is g's)", d, err)
			}
			if _, err := b.DescribeGroup(ctx, "", "other"); !errors.Is(err, groups.ErrGroupNotFound) {
				t.Fatalf("describe other: %v, want ErrGroupNotFound", err)
			}
			if err := m.Heartbeat(j.MemberID, j.Generation); err != nil {
				t.Fatalf("heartbeat: %v", err)
			}
			if err := m.Heartbeat(j.MemberID, j.Generation+5); !errors.Is(err, groups.ErrIllegalGeneration) {
				t.Fatalf("heartbeat of another generation: %v, want ErrIllegalGeneration", err)
			}
			cs := []offsets.Committed{{Topic: "t", Offset: 1}}
			if err := b.CommitOffsets(ctx, "", "g", j.MemberID, j.Generation+5, cs); !errors.Is(err, groups.ErrIllegalGeneration) {
				t.Fatalf("commit in another generation: %v, want ErrIllegalGeneration", err)
			}
			if err := b.CommitOffsets(ctx, "", "g", j.MemberID, j.Generation, cs); err != nil {
				t.Fatalf("commit in the member's generation: %v", err)
			}
			if err := b.DeleteGroup(ctx, "", "g"); !errors.Is(err, groups.ErrGroupNotEmpty) {
				t.Fatalf("delete a group with a member: %v, want ErrGroupNotEmpty", err)
			}
			if got, err := b.FetchOffsets(ctx, "", "g", nil); err != nil || len(got) != 1 {
				t.Fatalf("a refused delete left %+v %v, want the offset kept", got, err)
			}
			if err := m.Leave(j.MemberID); err != nil {
				t.Fatal(err)
			}
			if err := m.Heartbeat(j.MemberID, j.Generation); !errors.Is(err, groups.ErrUnknownMember) {
				t.Fatalf("heartbeat after leaving: %v, want ErrUnknownMember", err)
			}
		})
	}
}

// Retention deletes whole segments past a topic's policy, at the trim a
// segment roll kicks, on both control planes (in a cluster, only below
// what a Raft snapshot covers): the log start moves forward and the
// newest record stays readable.
func TestRetentionTrimsOldSegments(t *testing.T) {
	snapshotOften := func(t *testing.T) *broker.Broker {
		return openOneNodeClusterWith(t, func(cc *cluster.Config) {
			cc.Raft.SnapshotThreshold = 2
			cc.Raft.SnapshotInterval = 50 * time.Millisecond
		})
	}
	for _, pl := range []struct {
		name string
		open func(*testing.T) *broker.Broker
	}{{"single node", open}, {"one-node cluster", snapshotOften}} {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx := context.Background()
			cfg := partition.DefaultConfig("t")
			cfg.SegmentBytes = partition.MinSegmentBytes
			cfg.RetentionRecords = 1
			if _, err := b.CreateTopic(ctx, "", cfg); err != nil {
				t.Fatal(err)
			}
			// Each batch of 3,000 bytes rolls a segment of 4 KiB, which
			// kicks a trim.
			value := strings.Repeat("v", 3000)
			var pos []broker.PartitionOffset
			waitFor(t, "retention moves the log start", func() bool {
				produceTo(t, b, "t", 0, value)
				var err error
				pos, err = b.ListOffsets(ctx, "", "t", nil, broker.Earliest)
				if err != nil {
					t.Fatal(err)
				}
				return pos[0].Offset > 0
			})
			hw := pos[0].HighWatermark
			if pos[0].Offset > hw-1 {
				t.Fatalf("after retention: %+v, want the newest record (%d) kept", pos, hw-1)
			}
			got := fetch(t, b, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t", Offset: hw - 1}}})
			if got[0].Err != nil || got[0].Records != 1 {
				t.Fatalf("the newest record: %+v", got[0])
			}
		})
	}
}

// Topic layouts list what Topics lists at no Raft cost; AwaitTopic
// returns once the topic is there (at once on a single node); producer
// ids are fresh and non-negative; a user needs a valid name and a
// password.
func TestLayoutsAwaitProducerIDsAndUserChecks(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			createTopic(t, b, "t", 2)
			createTopic(t, b, "u", 1)
			if err := b.AwaitTopic(ctx, "t", 2); err != nil {
				t.Fatalf("await t: %v", err)
			}
			ls, err := b.TopicLayouts(ctx, "")
			if err != nil || len(ls) != 2 || ls[0].Config.Name != "t" || len(ls[0].Partitions) != 2 || ls[1].Config.Name != "u" {
				t.Fatalf("layouts: %+v %v, want t (2 partitions) and u", ls, err)
			}
			if l, err := b.TopicLayout(ctx, "", "u"); err != nil || l.Partitions[0].Leader != pl.id {
				t.Fatalf("layout of u: %+v %v, want led by %q", l, err, pl.id)
			}
			if _, err := b.TopicLayout(ctx, "", "nope"); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("layout of an unknown topic: %v, want ErrUnknownTopic", err)
			}
			if n, err := b.PartitionCount(ctx, "", "t"); err != nil || n != 2 {
				t.Fatalf("partition count: %d %v", n, err)
			}

			id1, ep, err1 := b.NewProducerID(ctx)
			id2, _, err2 := b.NewProducerID(ctx)
			if err1 != nil || err2 != nil || id1 < 0 || id2 < 0 || id1 == id2 || ep != 0 {
				t.Fatalf("producer ids %d %d (epoch %d): %v %v, want two fresh ones of epoch 0", id1, id2, ep, err1, err2)
			}

			if err := b.CreateUser(ctx, "", "bob", "", false); !errors.Is(err, kind.ErrInvalidArgument) {
				t.Fatalf("a user with no password: %v, want kind.ErrInvalidArgument", err)
			}
			if err := b.CreateUser(ctx, "", "", "pw", false); !errors.Is(err, kind.ErrInvalidArgument) {
				t.Fatalf("a user with no name: %v, want kind.ErrInvalidArgument", err)
			}
			if us, err := b.Users(ctx, ""); err != nil || len(us) != 0 {
				t.Fatalf("users after refusals: %v %v, want none", us, err)
			}
		})
	}
}

package broker_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// openOneNodeCluster opens a broker that bootstraps a cluster of itself
// (node id "n1", Raft on 127.0.0.1) and waits until the metadata lists it.
func openOneNodeCluster(t *testing.T) *broker.Broker {
	t.Helper()
	return openOneNodeClusterWith(t, nil)
}

// openOneNodeClusterWith is openOneNodeCluster with tweak applied to the
// cluster's Config (nil: none).
func openOneNodeClusterWith(t *testing.T, tweak func(*cluster.Config)) *broker.Broker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	cc := &cluster.Config{NodeID: "n1", RaftListener: ln, Bootstrap: true, Raft: rc}
	if tweak != nil {
		tweak(cc)
	}
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: log.FsyncPolicy{Mode: log.FsyncNever}, Cluster: cc})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(b.Members(), []string{"n1"}) {
		if time.Now().After(deadline) {
			t.Fatalf("the one-node cluster did not register its node: members %v", b.Members())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b
}

// planes are the two control planes the broker may run on, each with the
// id its node has.
var planes = []struct {
	name string
	id   string
	open func(*testing.T) *broker.Broker
}{
	{"single node", broker.SelfID, open},
	{"one-node cluster", "n1", openOneNodeCluster},
}

// TestControlPlaneTopics runs the same topic operations through both
// control planes and expects the same answers and error kinds.
func TestControlPlaneTopics(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx := context.Background()
			cfg := partition.DefaultConfig("t")
			cfg.Partitions = 2
			got, err := b.CreateTopic(ctx, "", cfg)
			if err != nil || got.Replicas != 1 || got.Partitions != 2 {
				t.Fatalf("create: %+v %v, want 2 partitions of 1 replica (the default)", got, err)
			}
			// Taken name before a bad replica count: one validation
			// (cluster.CheckNewTopic) for both.
			cfg.Replicas = 2
			if _, err := b.CreateTopic(ctx, "", cfg); !errors.Is(err, broker.ErrTopicExists) {
				t.Fatalf("create twice with 2 replicas: %v, want ErrTopicExists", err)
			}
			other := cfg
			other.Name = "u"
			if _, err := b.CreateTopic(ctx, "", other); !errors.Is(err, kind.ErrInvalidArgument) {
				t.Fatalf("2 replicas on one node: %v, want kind.ErrInvalidArgument", err)
			}
			other.Replicas, other.SegmentBytes = 1, 1
			if _, err := b.CreateTopic(ctx, "", other); !errors.Is(err, partition.ErrInvalidConfig) {
				t.Fatalf("segment of 1 byte: %v, want partition.ErrInvalidConfig", err)
			}
			if _, err := b.Topic(ctx, "", "u"); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("a refused topic: %v, want ErrUnknownTopic", err)
			}

			ms := int64(60_000)
			if c, err := b.AlterTopic(ctx, "", "t", partition.ConfigChange{RetentionMs: &ms}); err != nil || c.RetentionMs != ms {
				t.Fatalf("alter: %+v %v", c, err)
			}
			if _, err := b.AlterTopic(ctx, "", "nope", partition.ConfigChange{RetentionMs: &ms}); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("alter an unknown topic: %v, want ErrUnknownTopic", err)
			}
			if c, err := b.AddPartitions(ctx, "", "t", 3); err != nil || c.Partitions != 3 {
				t.Fatalf("add partitions: %+v %v", c, err)
			}
			if _, err := b.AddPartitions(ctx, "", "t", 2); !errors.Is(err, partition.ErrInvalidConfig) {
				t.Fatalf("shrink: %v, want partition.ErrInvalidConfig", err)
			}

			info, err := b.Topic(ctx, "", "t")
			if err != nil || len(info.Partitions) != 3 || info.Config.RetentionMs != ms {
				t.Fatalf("topic: %+v %v", info, err)
			}
			for _, p := range info.Partitions {
				if p.Leader != pl.id || !slices.Equal(p.Replicas, []string{pl.id}) {
					t.Fatalf("partition %d: leader %q replicas %v, want %q alone", p.ID, p.Leader, p.Replicas, pl.id)
				}
			}
			st, err := b.ClusterStatus(ctx, "", false)
			if err != nil || len(st.Partitions) != 3 || st.Self != pl.id {
				t.Fatalf("status: %+v %v", st, err)
			}
			nodes, err := b.Nodes(ctx)
			if err != nil || len(nodes) != 1 || nodes[0].ID != pl.id || b.LocalNode().ID != pl.id {
				t.Fatalf("nodes: %+v %v, local %+v", nodes, err, b.LocalNode())
			}

			if err := b.DeleteTopic(ctx, "", "t"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Topic(ctx, "", "t"); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("deleted topic: %v, want ErrUnknownTopic", err)
			}
			if err := b.DeleteTopic(ctx, "", "t"); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("delete twice: %v, want ErrUnknownTopic", err)
			}
		})
	}
}

// TestControlPlaneOffsets runs produce, list offsets, committed offsets,
// groups and delete records through both control planes.
func TestControlPlaneOffsets(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx := context.Background()
			createTopic(t, b, "t", 1)
			if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a", "b", "c")}); err != nil {
				t.Fatal(err)
			}
			pos, err := b.ListOffsets(ctx, "", "t", nil, broker.Latest)
			if err != nil || len(pos) != 1 || pos[0].Offset != 3 || pos[0].HighWatermark != 3 {
				t.Fatalf("list offsets: %+v %v", pos, err)
			}
			res, err := b.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t"}}})
			if err != nil || res.Partitions[0].Err != nil || res.Partitions[0].Records != 3 {
				t.Fatalf("fetch: %+v %v", res.Partitions, err)
			}
			res.Release()

			c := []offsets.Committed{{Topic: "t", Partition: 0, Offset: 2}}
			if err := b.CommitOffsets(ctx, "", "g", "", -1, c); err != nil {
				t.Fatal(err)
			}
			beyond := []offsets.Committed{{Topic: "t", Partition: 0, Offset: 9}}
			if err := b.CommitOffsets(ctx, "", "g", "", -1, beyond); !errors.Is(err, kind.ErrInvalidArgument) {
				t.Fatalf("commit beyond the high watermark: %v, want kind.ErrInvalidArgument", err)
			}
			got, err := b.FetchOffsets(ctx, "", "g", nil)
			if err != nil || len(got) != 1 || got[0].Offset != 2 {
				t.Fatalf("fetch offsets: %+v %v", got, err)
			}
			if gs, err := b.ListGroups(ctx, ""); err != nil || !slices.Equal(gs, []string{"g"}) {
				t.Fatalf("groups: %v %v", gs, err)
			}
			if lag := b.Lag(ctx, "g", got); !lag[0].Known || lag[0].Lag != 1 {
				t.Fatalf("lag: %+v", lag)
			}
			if _, err := b.Coordinator(); err != nil {
				t.Fatalf("coordinator: %v", err)
			}
			if err := b.DeleteGroup(ctx, "", "g"); err != nil {
				t.Fatal(err)
			}
			if got, err := b.FetchOffsets(ctx, "", "g", nil); err != nil || len(got) != 0 {
				t.Fatalf("offsets of a deleted group: %+v %v", got, err)
			}
			if err := b.DeleteGroup(ctx, "", "g"); !errors.Is(err, groups.ErrGroupNotFound) {
				t.Fatalf("delete a group twice: %v, want ErrGroupNotFound", err)
			}

			if found, end, err := b.EpochEnd(ctx, "", "t", 0, 1<<30); err != nil || end != 3 || found < 0 {
				t.Fatalf("epoch end: %d %d %v", found, end, err)
			}
			if start, err := b.DeleteRecords(ctx, "", "t", 0, -1); err != nil || start != 3 {
				t.Fatalf("delete records: %d %v, want the start at 3", start, err)
			}
			res, err = b.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{{Topic: "t"}}})
			var oor *log.OutOfRangeError
			if err != nil || !errors.As(res.Partitions[0].Err, &oor) {
				t.Fatalf("fetch below the start: %+v %v, want *OutOfRangeError", res.Partitions, err)
			}
			res.Release()
			if _, err := b.ListOffsets(ctx, "", "nope", nil, broker.Latest); !errors.Is(err, broker.ErrUnknownTopic) {
				t.Fatalf("list offsets of an unknown topic: %v, want ErrUnknownTopic", err)
			}
		})
	}
}

// TestControlPlaneUsersAndACLs runs user and ACL writes through both
// control planes.
func TestControlPlaneUsersAndACLs(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			ctx := context.Background()
			if err := b.CreateUser(ctx, "", "alice", "pw", false); err != nil {
				t.Fatal(err)
			}
			if err := b.CreateUser(ctx, "", "alice", "pw2", false); !errors.Is(err, broker.ErrUserExists) {
				t.Fatalf("create twice: %v, want ErrUserExists", err)
			}
			if err := b.CreateUser(ctx, "", "alice", "pw2", true); err != nil {
				t.Fatalf("replace: %v", err)
			}
			if us, err := b.Users(ctx, ""); err != nil || !slices.Equal(us, []string{"alice"}) {
				t.Fatalf("users: %v %v", us, err)
			}
			if _, err := b.CredentialStore().Lookup("alice"); err != nil {
				t.Fatalf("lookup: %v", err)
			}
			if err := b.DeleteUser(ctx, "", "bob"); !errors.Is(err, auth.ErrUnknownUser) {
				t.Fatalf("delete an unknown user: %v, want ErrUnknownUser", err)
			}
			if err := b.DeleteUser(ctx, "", "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.CredentialStore().Lookup("alice"); !errors.Is(err, auth.ErrUnknownUser) {
				t.Fatalf("lookup a deleted user: %v, want ErrUnknownUser", err)
			}

			a := auth.ACL{Principal: auth.User("alice"), Permission: auth.Allow, Operation: auth.OpRead,
				ResourceType: auth.Topic("t").Type, PatternType: auth.PatternLiteral, Name: "t"}
			if err := b.AddACLs(ctx, "", a); err != nil {
				t.Fatal(err)
			}
			if got, err := b.ListACLs(ctx, "", auth.ACLFilter{}); err != nil || len(got) != 1 || got[0] != a {
				t.Fatalf("list: %+v %v", got, err)
			}
			none := auth.ACLFilter{Name: "other"}
			if got, err := b.RemoveACLs(ctx, "", none); err != nil || got != nil {
				t.Fatalf("remove nothing: %+v %v, want none and no error", got, err)
			}
			if got, err := b.RemoveACLs(ctx, "", auth.ExactFilter(a)); err != nil || len(got) != 1 || got[0] != a {
				t.Fatalf("remove: %+v %v", got, err)
			}
			if got, err := b.ListACLs(ctx, "", auth.ACLFilter{}); err != nil || len(got) != 0 {
				t.Fatalf("list after remove: %+v %v", got, err)
			}
		})
	}
}

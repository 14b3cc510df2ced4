package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// twoNodes is a cluster of n1, which leads the metadata, and n2.
func twoNodes(t *testing.T) (leader, follower *broker.Broker) {
	t.Helper()
	admin := auth.User("admin")
	leader = peerBroker(t, "n1", "", admin)
	waitFor(t, "n1 leads the metadata", leader.Cluster().IsMetaLeader)
	follower = peerBroker(t, "n2", leader.Cluster().RaftAddr(), admin)
	waitFor(t, "n2 joined and knows the leader", func() bool {
		return slices.Equal(follower.Members(), []string{"n1", "n2"}) && follower.Cluster().MetaLeader().RaftAddr != ""
	})
	if !leader.Cluster().IsMetaLeader() {
		t.Fatal("n1 no longer leads the metadata")
	}
	return leader, follower
}

// A node that does not lead the metadata refuses offset, group, user and
// ACL requests untouched (*NotLeaderError naming the leader); through
// Forward it makes them of the leader, whose answers come back: offsets
// committed and fetched, groups listed, a user deleted, ACLs removed, and
// DeleteRecords on a partition another node leads; topic changes made
// on it the broker passes on by itself.
func TestForwarderPassesOnToTheLeader(t *testing.T) {
	leader, follower := twoNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr := broker.Principal(auth.User("admin").String())
	cfg := partition.DefaultConfig("t")
	cfg.Replicas = 2
	if _, err := leader.CreateTopic(ctx, pr, cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the topic is on n2 with a leader", func() bool {
		info, err := follower.Topic(ctx, pr, "t")
		return err == nil && info.Partitions[0].Leader != ""
	})
	info, err := follower.Topic(ctx, pr, "t")
	if err != nil {
		t.Fatal(err)
	}
	lead, other := leader, follower
	if info.Partitions[0].Leader == "n2" {
		lead, other = follower, leader
	}
	if _, err := lead.Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "t", Batch: records("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}

	var nl *broker.NotLeaderError
	cs := []offsets.Committed{{Topic: "t", Offset: 2}}
	if err := follower.CommitOffsets(ctx, pr, "g", "", -1, cs); !errors.As(err, &nl) || !nl.Untouched || nl.Leader.ID != "n1" {
		t.Fatalf("a commit on n2: %v, want *NotLeaderError (untouched) naming n1", err)
	}
	fw := follower.Forward()
	if err := fw.CommitOffsets(ctx, pr, "g", "", -1, cs); err != nil {
		t.Fatalf("a commit passed on: %v", err)
	}
	if got, err := leader.FetchOffsets(ctx, pr, "g", nil); err != nil || len(got) != 1 || got[0].Offset != 2 {
		t.Fatalf("offsets on the leader: %+v %v, want the commit passed on", got, err)
	}
	if got, err := fw.FetchOffsets(ctx, pr, "g", []string{"t"}); err != nil || len(got) != 1 || got[0].Offset != 2 {
		t.Fatalf("offsets fetched through n2: %+v %v", got, err)
	}
	if gs, err := fw.ListGroups(ctx, pr); err != nil || !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("groups through n2: %v %v", gs, err)
	}
	if err := follower.DeleteGroup(ctx, pr, "g"); err == nil {
		t.Fatal("a group deleted on n2, which does not coordinate the groups")
	}
	if err := fw.DeleteGroup(ctx, broker.Principal(auth.User("bob").String()), "g"); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("a group deleted through n2 by a principal without the right: %v, want denied", err)
	}
	if err := fw.DeleteGroup(ctx, pr, "g"); err != nil {
		t.Fatalf("delete a group through n2: %v", err)
	}
	if gs, err := leader.ListGroups(ctx, pr); err != nil || len(gs) != 0 {
		t.Fatalf("groups on the leader after a delete through n2: %v %v", gs, err)
	}
	if err := fw.DeleteGroup(ctx, pr, "g"); !errors.Is(err, groups.ErrGroupNotFound) {
		t.Fatalf("delete it again through n2: %v, want ErrGroupNotFound from the leader", err)
	}
	if err := fw.CommitOffsets(ctx, pr, "g", "", -1, cs); err != nil {
		t.Fatal(err)
	}

	if err := fw.CreateUser(ctx, pr, "carol", "pw", false); err != nil {
		t.Fatal(err)
	}
	if err := fw.DeleteUser(ctx, pr, "carol"); err != nil {
		t.Fatalf("delete a user through n2: %v", err)
	}
	if err := fw.DeleteUser(ctx, pr, "carol"); !errors.Is(err, auth.ErrUnknownUser) {
		t.Fatalf("delete it again through n2: %v, want ErrUnknownUser from the leader", err)
	}
	a := auth.ACL{Principal: auth.User("carol"), Permission: auth.Allow, Operation: auth.OpRead,
		ResourceType: auth.ResourceTopic, PatternType: auth.PatternLiteral, Name: "t"}
	if err := fw.AddACLs(ctx, pr, a); err != nil {
		t.Fatal(err)
	}
	if got, err := fw.RemoveACLs(ctx, pr, auth.ExactFilter(a)); err != nil || len(got) != 1 || got[0] != a {
		t.Fatalf("remove an ACL through n2: %+v %v", got, err)
	}
	if got, err := leader.ListACLs(ctx, pr, auth.ACLFilter{}); err != nil || len(got) != 0 {
		t.Fatalf("ACLs on the leader: %+v %v, want none", got, err)
	}

	if _, err := other.DeleteRecords(ctx, pr, "t", 0, 1); !errors.As(err, &nl) {
		t.Fatalf("delete records on the partition's follower: %v, want *NotLeaderError", err)
	}
	if start, err := other.Forward().DeleteRecords(ctx, pr, "t", 0, 1); err != nil || start != 1 {
		t.Fatalf("delete records passed on: %d %v, want the start at 1", start, err)
	}
	if pos, err := lead.ListOffsets(ctx, pr, "t", nil, broker.Earliest); err != nil || pos[0].Offset != 1 {
		t.Fatalf("earliest on the partition's leader: %+v %v, want 1", pos, err)
	}

	// Topic changes on n2 the broker passes on to the leader itself.
	ms := int64(120_000)
	if c, err := follower.AlterTopic(ctx, pr, "t", partition.ConfigChange{RetentionMs: &ms}); err != nil || c.RetentionMs != ms {
		t.Fatalf("alter through n2: %+v %v", c, err)
	}
	if c, err := follower.AddPartitions(ctx, pr, "t", 2); err != nil || c.Partitions != 2 {
		t.Fatalf("add partitions through n2: %+v %v", c, err)
	}
	if got, err := leader.Topic(ctx, pr, "t"); err != nil || got.Config.RetentionMs != ms || len(got.Partitions) != 2 {
		t.Fatalf("t on the leader: %+v %v, want the changes made through n2", got.Config, err)
	}
	if err := follower.DeleteTopic(ctx, pr, "t"); err != nil {
		t.Fatalf("delete through n2: %v", err)
	}
	if _, err := leader.Topic(ctx, pr, "t"); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("t on the leader after a delete through n2: %v, want ErrUnknownTopic", err)
	}
}

// On a single node Forward runs the broker's own methods: nothing is
// passed on, and their answers and errors are the broker's.
func TestForwarderAlone(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	produceTo(t, b, "t", 0, "a", "b")
	fw := b.Forward()
	if err := fw.CommitOffsets(ctx, "", "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, err := fw.FetchOffsets(ctx, "", "g", nil); err != nil || len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("fetch offsets: %+v %v", got, err)
	}
	if gs, err := fw.ListGroups(ctx, ""); err != nil || !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("groups: %v %v", gs, err)
	}
	if start, err := fw.DeleteRecords(ctx, "", "t", 0, -1); err != nil || start != 2 {
		t.Fatalf("delete records: %d %v", start, err)
	}
	if err := fw.DeleteUser(ctx, "", "nobody"); !errors.Is(err, auth.ErrUnknownUser) {
		t.Fatalf("delete an unknown user: %v, want ErrUnknownUser", err)
	}
	if got, err := fw.RemoveACLs(ctx, "", auth.ACLFilter{}); err != nil || len(got) != 0 {
		t.Fatalf("remove ACLs of none: %+v %v", got, err)
	}
	if _, err := fw.RemoveNode(ctx, "", "n9"); err == nil {
		t.Fatal("remove a node on a single node: no error")
	}
}

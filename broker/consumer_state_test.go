package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// settle2 has members a and b of group cg (topic q, 4 partitions) reach a
// stable split and returns their last answers.
func settle2(t *testing.T, b *broker.Broker) (a, bb broker.ConsumerHeartbeatResult) {
	t.Helper()
	createTopic(t, b, "q", 4)
	a = beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}, ClientID: "ca"})
	id := a.Assignment[0].TopicID
	owned := func(r broker.ConsumerHeartbeatResult) []broker.ConsumerTopicPartitions {
		return []broker.ConsumerTopicPartitions{{TopicID: id, Partitions: partitionsOf(r.Assignment)}}
	}
	bb = beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", Topics: []string{"q"}, ClientID: "cb"})
	a = beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: owned(a), ClientID: "ca"})
	a = beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: owned(a), ClientID: "ca"})
	bb = beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: bb.MemberEpoch, Owned: []broker.ConsumerTopicPartitions{}, ClientID: "cb"})
	if len(partitionsOf(a.Assignment)) != 2 || len(partitionsOf(bb.Assignment)) != 2 || a.MemberEpoch != bb.MemberEpoch {
		t.Fatalf("no stable split: a %v at %d, b %v at %d", a.Assignment, a.MemberEpoch, bb.Assignment, bb.MemberEpoch)
	}
	return a, bb
}

// A restarted single node takes its server-assigned groups over: the
// members carry on with their ids, epochs and partitions (no
// UNKNOWN_MEMBER_ID, no new epoch), their commits at their epoch are
// accepted, and the group epoch goes on from where it was.
func TestConsumerGroupSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b := openDir(t, dir)
	a, bb := settle2(t, b)
	before, err := b.DescribeConsumerGroup(context.Background(), "", "cg")
	if err != nil || before.State != "Stable" {
		t.Fatalf("describe before the restart: %+v, %v", before, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openDir(t, dir)
	defer b.Close()
	ctx := context.Background()
	cs := []offsets.Committed{{Topic: "q", Partition: partitionsOf(a.Assignment)[0], Offset: 0}}
	if err := b.CommitOffsets(ctx, "", "cg", "a", a.MemberEpoch, cs); err != nil {
		t.Fatalf("a's commit at its epoch after the restart: %v", err)
	}
	after, err := b.DescribeConsumerGroup(ctx, "", "cg")
	if err != nil || after.State != "Stable" || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		len(after.Members) != 2 {
		t.Fatalf("describe after the restart: %+v, %v; before %+v", after, err, before)
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.Member != w.Member || m.MemberEpoch != w.MemberEpoch || m.ClientID != w.ClientID ||
			!slices.Equal(partitionsOf(m.Assignment), partitionsOf(w.Assignment)) || !slices.Equal(m.Topics, w.Topics) {
			t.Errorf("member after the restart %+v, before %+v", m, w)
		}
	}
	owned := []broker.ConsumerTopicPartitions{{TopicID: a.Assignment[0].TopicID, Partitions: partitionsOf(a.Assignment)}}
	a2 := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: owned, ClientID: "ca"})
	if a2.MemberEpoch != a.MemberEpoch || a2.Assignment != nil {
		t.Fatalf("a after the restart: epoch %d, assignment %v; want epoch %d, no change", a2.MemberEpoch, a2.Assignment, a.MemberEpoch)
	}
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: bb.MemberEpoch, ClientID: "cb"})
	c := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "c", Topics: []string{"q"}})
	if c.MemberEpoch <= a.MemberEpoch {
		t.Fatalf("a new member's epoch %d after the restart, want above %d", c.MemberEpoch, a.MemberEpoch)
	}
}

// A heartbeat that changes nothing writes no record; one that changes the
// group does, before it answers.
func TestConsumerGroupWritesOnlyChanges(t *testing.T) {
	b := open(t)
	a, _ := settle2(t, b)
	n := broker.ConsumerGroupWrites(b)
	if n == 0 {
		t.Fatal("no record written while the group formed")
	}
	owned := []broker.ConsumerTopicPartitions{{TopicID: a.Assignment[0].TopicID, Partitions: partitionsOf(a.Assignment)}}
	for range 3 {
		beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: a.MemberEpoch, Owned: owned, ClientID: "ca"})
		beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: a.MemberEpoch, ClientID: "cb"})
	}
	if m := broker.ConsumerGroupWrites(b); m != n {
		t.Fatalf("%d records written by heartbeats that changed nothing", m-n)
	}
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "b", MemberEpoch: -1})
	if m := broker.ConsumerGroupWrites(b); m != n+1 {
		t.Fatalf("%d records written by a member's leave, want 1", m-n)
	}
}

// In a cluster the group's record is the metadata's group-state record of
// its name, written before the heartbeat answers, and removed when its
// last member leaves; a classic join of the group meanwhile is refused as
// of another protocol, and so is deleting it.
func TestClusterRecordsConsumerGroup(t *testing.T) {
	b := openOneNodeCluster(t)
	createTopic(t, b, "q", 2)
	a := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}})
	rec, ok := b.Cluster().GroupStates()["cg"]
	if !ok || int32(rec.Generation) != a.MemberEpoch || len(rec.Value) == 0 {
		t.Fatalf("record of cg after a's join: %+v (found %v), a's epoch %d", rec, ok, a.MemberEpoch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := b.GroupMember(ctx, "", "cg")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Join(ctx, groups.JoinRequest{SessionTimeout: 30 * time.Second, ProtocolType: groups.ConsumerProtocolType,
		Protocols: []groups.Protocol{{Name: "range", Metadata: []byte("m")}}})
	if !errors.Is(err, groups.ErrInconsistentProtocol) {
		t.Fatalf("a classic join of a consumer group with members: %v", err)
	}
	if err := b.DeleteGroup(ctx, "", "cg"); !errors.Is(err, groups.ErrGroupNotEmpty) {
		t.Fatalf("deleting a consumer group with members: %v", err)
	}
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: -1})
	if rec, ok := b.Cluster().GroupStates()["cg"]; ok {
		t.Fatalf("cg still recorded after its last member left: %+v", rec)
	}
}

// A heartbeat whose group id is longer than a recorded group's may be, or
// whose strings are not UTF-8 (the record would not keep them as they
// are), is refused as invalid.
func TestConsumerHeartbeatRefusesUnrecordable(t *testing.T) {
	b := open(t)
	createTopic(t, b, "q", 1)
	bad := "\xff"
	for _, r := range []broker.ConsumerHeartbeatRequest{
		{Group: strings.Repeat("g", offsets.MaxGroupBytes+1), Member: "a", Topics: []string{"q"}},
		{Group: "cg", Member: bad, Topics: []string{"q"}},
		{Group: "cg", Member: "a", Topics: []string{"q"}, InstanceID: &bad},
		{Group: "cg", Member: "a", Topics: []string{"q", bad}},
	} {
		res, err := b.ConsumerHeartbeat(context.Background(), r)
		if err != nil || res.Code != broker.ConsumerInvalidRequest {
			t.Errorf("heartbeat %+v: code %d %s, %v; want ConsumerInvalidRequest", r, res.Code, res.Message, err)
		}
	}
}

// A group whose last member left keeps its group epoch, as Kafka's does:
// after a restart (a coordinator that takes the group over from the
// record) a new member's epoch is above every epoch the group had, not 1
// again, so an epoch never names two memberships of the group.
func TestConsumerGroupEmptiedKeepsEpoch(t *testing.T) {
	dir := t.TempDir()
	b := openDir(t, dir)
	createTopic(t, b, "q", 2)
	a := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", Topics: []string{"q"}})
	beat(t, b, broker.ConsumerHeartbeatRequest{Member: "a", MemberEpoch: -1})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openDir(t, dir)
	defer b.Close()
	c := beat(t, b, broker.ConsumerHeartbeatRequest{Member: "c", Topics: []string{"q"}})
	// a's leave moved the group epoch past a's epoch; c's join moves it on.
	if c.MemberEpoch <= a.MemberEpoch+1 {
		t.Fatalf("a new member's epoch %d after the emptied group's restart, want above %d (a's epoch %d, then its leave)",
			c.MemberEpoch, a.MemberEpoch+1, a.MemberEpoch)
	}
}

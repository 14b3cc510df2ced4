package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/log"
)

func openDir(t *testing.T, dir string) *broker.Broker {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	return b
}

// kafkaMember joins g as a Kafka client does (it claims no generation) and
// returns the generation it got.
func kafkaMember(t *testing.T, b *broker.Broker, memberID string) groups.JoinResult {
	t.Helper()
	c, err := b.Coordinator()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.JoinGroup(ctx, groups.JoinRequest{Group: "g", MemberID: memberID, ClientID: "kgo",
		SessionTimeout: 30 * time.Second, ProtocolType: groups.ConsumerProtocolType,
		Protocols: []groups.Protocol{{Name: "range", Metadata: []byte("m")}}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A restarted single node continues a group's generations above the ones
// it handed out before (they are recorded in its DB), also after the group
// was deleted: no two members of two incarnations of the coordinator ever
// share a generation.
func TestGenerationsContinueAfterRestart(t *testing.T) {
	dir := t.TempDir()
	b := openDir(t, dir)
	res := kafkaMember(t, b, "")
	c, _ := b.Coordinator()
	for i := 0; i < 2; i++ {
		if err := c.RequestRebalance("g"); err != nil {
			t.Fatal(err)
		}
		res = kafkaMember(t, b, res.MemberID)
	}
	before := res.Generation
	if before != 3 {
		t.Fatalf("generation %d before the restart, want 3", before)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openDir(t, dir)
	defer b.Close()
	res = kafkaMember(t, b, "")
	if res.Generation <= before {
		t.Fatalf("the restarted node handed out generation %d; before the restart it had handed out %d", res.Generation, before)
	}
	after := res.Generation
	c, _ = b.Coordinator()
	if err := c.LeaveGroup("g", res.MemberID); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup(context.Background(), "", "g"); err != nil {
		t.Fatal(err)
	}
	if res = kafkaMember(t, b, ""); res.Generation <= after {
		t.Fatalf("generation %d after DeleteGroup, had %d", res.Generation, after)
	}
}

// A single node records each completed generation in its DB: after a
// restart its coordinator knows the group's members, so a member that
// keeps heartbeating and committing in its generation notices nothing.
func TestSingleNodeKeepsMembersAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	b := openDir(t, dir)
	_, j := joinSynced(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openDir(t, dir)
	defer b.Close()
	c, err := b.Coordinator()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat("g", j.MemberID, j.Generation); err != nil {
		t.Fatalf("heartbeat of the member of generation %d after the restart: %v", j.Generation, err)
	}
	if err := c.ValidateCommit("g", j.MemberID, j.Generation); err != nil {
		t.Fatalf("commit of the member of generation %d after the restart: %v", j.Generation, err)
	}
	d, err := c.Describe("g")
	if err != nil || len(d.Members) != 1 || d.Members[0].MemberID != j.MemberID || string(d.Members[0].Assignment) != "all" {
		t.Fatalf("group after the restart: %+v, %v", d, err)
	}
	// The member leaves: the record goes, and the next restart knows none.
	if err := c.LeaveGroup("g", j.MemberID); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openDir(t, dir)
	c, _ = b.Coordinator()
	if err := c.Heartbeat("g", j.MemberID, j.Generation); !errors.Is(err, groups.ErrUnknownMember) {
		t.Fatalf("heartbeat of a member that left, after a restart: %v, want ErrUnknownMember", err)
	}
}

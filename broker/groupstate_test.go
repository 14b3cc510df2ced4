package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

// A join whose metadata, or a leader's sync whose assignment for a member,
// is over its bound is refused as invalid, naming the bound.
func TestGroupMemberBounds(t *testing.T) {
	b := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := b.GroupMember(ctx, "", "g")
	if err != nil {
		t.Fatal(err)
	}
	join := groups.JoinRequest{SessionTimeout: 30 * time.Second, ProtocolType: groups.ConsumerProtocolType,
		Protocols: []groups.Protocol{{Name: "range", Metadata: make([]byte, broker.MaxMemberMetadataBytes)}}}
	if _, err := m.Join(ctx, join); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("join with %d bytes of metadata: %v", broker.MaxMemberMetadataBytes+len("range"), err)
	}
	join.Protocols[0].Metadata = []byte("m")
	j, err := m.Join(ctx, join)
	if err != nil {
		t.Fatal(err)
	}
	big := map[string][]byte{j.MemberID: make([]byte, broker.MaxMemberAssignmentBytes+1)}
	if _, err := m.Sync(ctx, groups.SyncRequest{MemberID: j.MemberID, Generation: j.Generation, Assignments: big}); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("sync with an assignment over the bound: %v", err)
	}
}

// In a cluster each completed generation is recorded in the metadata
// before the members learn their assignments, and a group whose members
// all left has no record.
func TestClusterRecordsGroupState(t *testing.T) {
	b := openOneNodeCluster(t)
	m, j := joinSynced(t, b)
	rec, ok := b.Cluster().GroupStates()["g"]
	if !ok {
		t.Fatal("no record of g once its member synced")
	}
	st, err := groups.DecodeGroupState(rec.Value)
	if err != nil || st.Generation != j.Generation || len(st.Members) != 1 || st.Members[0].MemberID != j.MemberID ||
		string(st.Members[0].Assignment) != "all" {
		t.Fatalf("record %+v, %v", st, err)
	}
	if err := m.Leave(j.MemberID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := b.Cluster().GroupStates()["g"]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("g is still recorded after its last member left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// joinSynced has one member join group g of b and sync its assignment
// "all": a completed generation.
func joinSynced(t *testing.T, b *broker.Broker) (broker.GroupMember, groups.JoinResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := b.GroupMember(ctx, "", "g")
	if err != nil {
		t.Fatal(err)
	}
	j, err := m.Join(ctx, groups.JoinRequest{SessionTimeout: 30 * time.Second, ProtocolType: groups.ConsumerProtocolType,
		Protocols: []groups.Protocol{{Name: "range", Metadata: []byte("m")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(ctx, groups.SyncRequest{MemberID: j.MemberID, Generation: j.Generation,
		Assignments: map[string][]byte{j.MemberID: []byte("all")}}); err != nil {
		t.Fatal(err)
	}
	return m, j
}

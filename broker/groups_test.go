package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// TestGroupsAuthorizeThePrincipal: a member's calls need read on the
// group, a describe needs describe, and a listing leaves out the groups
// the principal may not describe; the super user needs no ACL.
func TestGroupsAuthorizeThePrincipal(t *testing.T) {
	b := openSecured(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	c := partition.DefaultConfig("t")
	c.Partitions = 1
	if _, err := b.CreateTopic(ctx, admin, c); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g", "h"} {
		if err := b.CommitOffsets(ctx, admin, g, "", -1, []offsets.Committed{{Topic: "t", Offset: 0}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.GroupMember(ctx, alice, "g"); !errors.Is(err, broker.ErrDenied) {
		t.Fatalf("member of g without an ACL: %v, want a denial", err)
	}
	if _, err := b.DescribeGroup(ctx, alice, "g"); !errors.Is(err, broker.ErrDenied) {
		t.Fatalf("describe g without an ACL: %v, want a denial", err)
	}
	if err := b.AddACLs(ctx, admin, allow(auth.OpRead, auth.Group("g"))); err != nil {
		t.Fatal(err)
	}
	m, err := b.GroupMember(ctx, alice, "g")
	if err != nil {
		t.Fatalf("member of g with read: %v", err)
	}
	if err := m.Leave("nobody"); !errors.Is(err, groups.ErrUnknownMember) {
		t.Fatalf("leave as an unknown member: %v, want groups.ErrUnknownMember", err)
	}
	// Read implies describe; g is held by no member: not found on the
	// coordinator, listed with its committed offsets only.
	if _, err := b.DescribeGroup(ctx, alice, "g"); !errors.Is(err, groups.ErrGroupNotFound) {
		t.Fatalf("describe g with read: %v, want groups.ErrGroupNotFound", err)
	}
	list, err := b.ListMemberGroups(ctx, alice)
	if err != nil || len(list) != 1 || list[0].Group != "g" || !list[0].OffsetsOnly || list[0].State != groups.Empty {
		t.Fatalf("alice lists %+v %v, want g alone (offsets only, Empty)", list, err)
	}
	if list, err := b.ListMemberGroups(ctx, admin); err != nil || len(list) != 2 {
		t.Fatalf("the super user lists %+v %v, want g and h", list, err)
	}
	if err := b.CoordinatesGroups(); err != nil {
		t.Fatalf("a single node coordinates its groups: %v", err)
	}
}

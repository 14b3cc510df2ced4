package broker_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"slices"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// A refused produce writes nothing, a refused commit changes nothing, and
// listings leave out what the principal may not describe (prefix ACLs).
func TestDenialsHaveNoEffectAndListingsFilter(t *testing.T) {
	b := openSecured(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	for _, name := range []string{"team-a.orders", "team-a.users", "secret"} {
		c := partition.DefaultConfig(name)
		c.Partitions = 1
		if _, err := b.CreateTopic(ctx, admin, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Principal: admin, Topic: "secret", Batch: records("a")}); err != nil {
		t.Fatal(err)
	}
	if err := b.CommitOffsets(ctx, admin, "g", "", -1, []offsets.Committed{{Topic: "secret", Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	prefix := auth.ACL{Principal: auth.User("alice"), Permission: auth.Allow, Operation: auth.OpWrite,
		ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, Name: "team-a."}
	if err := b.AddACLs(ctx, admin, prefix, allow(auth.OpRead, auth.Group("g"))); err != nil {
		t.Fatal(err)
	}
	// Write on a prefix implies describe: the listing shows team-a.* only.
	ts, err := b.TopicConfigs(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range ts {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"team-a.orders", "team-a.users"}) {
		t.Fatalf("alice lists %v", names)
	}
	infos, _ := b.Topics(ctx, "")
	if len(infos) != 0 {
		t.Fatalf("anonymous lists %d topics, want none", len(infos))
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Principal: alice, Topic: "team-a.orders", Batch: records("ok")}); err != nil {
		t.Fatalf("prefix allow: %v", err)
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Principal: alice, Topic: "secret", Batch: records("no")}); !errors.Is(err, broker.ErrDenied) {
		t.Fatalf("produce to secret: %v", err)
	}
	if hw := b.LocalHighWatermark("secret", 0); hw != 1 {
		t.Fatalf("secret's high watermark %d after a refused produce, want 1", hw)
	}
	// Read on the group but not on the topic: the commit is refused whole.
	if err := b.CommitOffsets(ctx, alice, "g", "", -1, []offsets.Committed{{Topic: "secret", Offset: 0}}); !errors.Is(err, broker.ErrDenied) {
		t.Fatalf("commit: %v", err)
	}
	cs, err := b.FetchOffsets(ctx, admin, "g", nil)
	if err != nil || len(cs) != 1 || cs[0].Offset != 1 {
		t.Fatalf("offsets after a refused commit: %v %v", cs, err)
	}
	// Groups listing: alice may describe g (read implies describe).
	gs, err := b.ListGroups(ctx, alice)
	if err != nil || !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("alice's groups %v %v", gs, err)
	}
	// ... but her view of g's offsets leaves out topics she may not describe.
	cs, err = b.FetchOffsets(ctx, alice, "g", nil)
	if err != nil || len(cs) != 0 {
		t.Fatalf("alice's offsets of g: %v %v, want none (secret is hidden)", cs, err)
	}
	if gs, _ := b.ListGroups(ctx, "User:mallory"); len(gs) != 0 {
		t.Fatalf("mallory lists groups %v", gs)
	}
}

// On a node that runs alone, users and ACLs are in its Pebble store: they
// survive a restart, and a stored user logs in through the Gate.
func TestUsersAndACLsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := openSecured(t, dir)
	if err := b.CreateUser(ctx, admin, "alice", "s3cret", false); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateUser(ctx, admin, "alice", "other", false); !errors.Is(err, broker.ErrUserExists) {
		t.Fatalf("create twice: %v", err)
	}
	if err := b.CreateUser(ctx, admin, "gone", "pw", false); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteUser(ctx, admin, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteUser(ctx, admin, "gone"); !errors.Is(err, broker.ErrUnknownUser) {
		t.Fatalf("delete twice: %v", err)
	}
	acl := allow(auth.OpRead, auth.Topic("orders"))
	if err := b.AddACLs(ctx, admin, acl); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openSecured(t, dir)
	defer b.Close()
	users, err := b.Users(ctx, admin)
	if err != nil || !slices.Equal(users, []string{"alice"}) {
		t.Fatalf("users after restart: %v %v", users, err)
	}
	acls, err := b.ListACLs(ctx, admin, auth.ACLFilter{})
	if err != nil || len(acls) != 1 || acls[0] != acl {
		t.Fatalf("ACLs after restart: %v %v", acls, err)
	}
	if err := b.Authorize(ctx, alice, auth.OpRead, auth.Topic("orders")); err != nil {
		t.Fatalf("restored ACL: %v", err)
	}
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	tlsState := tlsConnState()
	id, err := b.Gate().Identify(ctx, auth.Presented{TLS: tlsState, Authorization: basic("alice", "s3cret")})
	if err != nil || broker.PrincipalOf(id) != alice {
		t.Fatalf("login: %v %v", id, err)
	}
	if _, err := b.Gate().Identify(ctx, auth.Presented{TLS: tlsState, Authorization: basic("alice", "wrong")}); !errors.Is(err, auth.ErrAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := b.Gate().Identify(ctx, auth.Presented{TLS: tlsState}); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("no credentials under --auth required: %v", err)
	}
}

// tlsConnState is a TLS connection without a client certificate (a
// password is accepted over TLS only).
func tlsConnState() *tls.ConnectionState { return &tls.ConnectionState{HandshakeComplete: true} }

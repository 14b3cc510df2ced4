package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
)

// secured is --auth required, --authz on, User:admin a super user.
func secured(c *node.Config) {
	c.Auth = broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}
}

// passwordClient dials addr over TLS (trusting caFile) as user.
func passwordClient(t *testing.T, addr, caFile, user, password string) *client.Client {
	t.Helper()
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(addr, client.WithTLS(tc), client.WithCredentials(user, password), client.WithRetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantDenied(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("%s: %v, want PERMISSION_DENIED", what, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %q does not name %q", what, err, w)
		}
	}
}

// Mutual TLS: the certificate's CN is the principal; ACLs allow and refuse
// per principal; listings show only what a principal may describe.
func TestAuthCertificatePrincipals(t *testing.T) {
	as := mtlsServer(t)
	admin, alice, bob := as("admin"), as("alice"), as("bob")
	ctx := ctx(t)
	if _, err := admin.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatalf("super user: %v", err)
	}
	if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow", Operation: "read",
		ResourceType: "topic", Pattern: "literal", Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	acls, err := admin.Admin().ListACLs(ctx, client.ACL{Principal: "User:alice"})
	if err != nil || len(acls) != 1 || acls[0].Operation != "read" {
		t.Fatalf("list ACLs: %v %v", acls, err)
	}
	// alice may read (and so describe) orders, not write it.
	ts, err := alice.Admin().ListTopics(ctx)
	if err != nil || len(ts) != 1 || ts[0].Name != "orders" {
		t.Fatalf("alice lists %v %v", ts, err)
	}
	p := alice.NewProducer(client.ProducerOptions{})
	_, err = p.Produce(ctx, client.Record{Topic: "orders", Value: []byte("x")}).Get(ctx)
	p.Close()
	wantDenied(t, "alice produces", err, "User:alice", "write", "orders")
	if !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("alice produces: %v does not match client.ErrPermissionDenied", err)
	}
	if _, err := alice.Admin().ListOffsets(ctx, "orders", nil, client.Latest()); err != nil {
		t.Fatalf("alice lists offsets: %v", err)
	}
	// bob has no ACL: he sees no topic and may not describe orders.
	if ts, err := bob.Admin().ListTopics(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("bob lists %v %v", ts, err)
	}
	_, err = bob.Admin().DescribeTopic(ctx, "orders")
	wantDenied(t, "bob describes", err, "User:bob", "describe", "orders")
	_, err = bob.Admin().Topic(ctx, "orders") // config_only: the same check
	wantDenied(t, "bob's partition count", err, "User:bob", "describe", "orders")
	if ti, err := alice.Admin().Topic(ctx, "orders"); err != nil || ti.Partitions != 1 {
		t.Fatalf("alice's partition count: %+v %v", ti, err)
	}
	wantDenied(t, "bob adds an ACL", bob.Admin().AddACLs(ctx, client.ACL{Principal: "User:bob", Permission: "allow",
		Operation: "all", ResourceType: "topic", Pattern: "literal", Name: "*"}), "User:bob", "alter", "cluster")
	_, err = bob.Admin().ClusterStatus(ctx)
	wantDenied(t, "bob's cluster status", err, "User:bob")
}

// Users and passwords: a good password is the user's principal, a wrong
// one and none (under --auth required) are UNAUTHENTICATED; the client
// refuses to send a password without TLS.
func TestAuthPasswords(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	certFile, keyFile := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile}
		secured(c)
		c.Auth.BootstrapUser, c.Auth.BootstrapPassword = "admin", "admin-pw"
	})
	ctx := ctx(t)
	admin := passwordClient(t, s.Addr(), ca.File, "admin", "admin-pw")
	// The bootstrap user is created in the background, at once on a
	// single node; retry the first call briefly.
	var err error
	for i := 0; i < 50; i++ {
		if err = admin.Admin().CreateUser(ctx, "alice", "alice-pw", false); !errors.Is(err, client.ErrUnauthenticated) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create alice: %v", err)
	}
	if err := admin.Admin().CreateUser(ctx, "alice", "again", false); !errors.Is(err, client.ErrUserExists) {
		t.Fatalf("create alice twice: %v", err)
	}
	if _, err := admin.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow", Operation: "write",
		ResourceType: "topic", Pattern: "prefixed", Name: "ord"}); err != nil {
		t.Fatal(err)
	}
	alice := passwordClient(t, s.Addr(), ca.File, "alice", "alice-pw")
	p := alice.NewProducer(client.ProducerOptions{})
	if _, err := p.Produce(ctx, client.Record{Topic: "orders", Value: []byte("x")}).Get(ctx); err != nil {
		t.Fatalf("alice produces with a prefix ACL: %v", err)
	}
	p.Close()
	_, err = alice.Admin().ListUsers(ctx)
	wantDenied(t, "alice lists users", err, "User:alice", "describe", "cluster")

	_, err = passwordClient(t, s.Addr(), ca.File, "alice", "wrong").Admin().ListTopics(ctx)
	if !errors.Is(err, client.ErrUnauthenticated) || status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong password: %v, want UNAUTHENTICATED", err)
	}
	_, err = passwordClient(t, s.Addr(), ca.File, "nobody", "x").Admin().ListTopics(ctx)
	if !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("unknown user: %v, want UNAUTHENTICATED", err)
	}
	_, err = nodetest.TLSClient(t, s.Addr(), ca.File, "", "").Admin().ListTopics(ctx)
	if !errors.Is(err, client.ErrUnauthenticated) || !strings.Contains(err.Error(), "requires authentication") {
		t.Fatalf("anonymous under --auth required: %v, want UNAUTHENTICATED", err)
	}
	if _, err := client.Dial(s.Addr(), client.WithCredentials("alice", "alice-pw")); err == nil {
		t.Fatal("the client agreed to send a password without TLS")
	}
	// A deleted user's next call fails.
	if err := admin.Admin().DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Admin().ListTopics(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("deleted user: %v, want UNAUTHENTICATED", err)
	}
	if err := admin.Admin().DeleteUser(ctx, "alice"); !errors.Is(err, client.ErrUserNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

// DeleteRecords over gRPC is the broker's, authorized as Kafka's: delete on
// the topic. A principal that may read and write a topic may not trim it
// until an ACL allows delete.
func TestAuthDeleteRecordsNeedsDelete(t *testing.T) {
	as := mtlsServer(t)
	admin, alice := as("admin"), as("alice")
	ctx := ctx(t)
	if _, err := admin.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	allow := func(op string) {
		t.Helper()
		if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow", Operation: op,
			ResourceType: "topic", Pattern: "literal", Name: "orders"}); err != nil {
			t.Fatal(err)
		}
	}
	allow("read")
	allow("write")
	p := alice.NewProducer(client.ProducerOptions{})
	for range 5 {
		p.Produce(ctx, client.Record{Topic: "orders", Value: []byte("x")})
	}
	p.Close()
	_, err := alice.Admin().DeleteRecords(ctx, "orders", 0, 3)
	wantDenied(t, "alice trims", err, "User:alice", "delete", "orders")
	if ps, err := alice.Admin().ListOffsets(ctx, "orders", nil, client.Earliest()); err != nil || ps[0].LogStartOffset != 0 || ps[0].HighWatermark != 5 {
		t.Fatalf("after the refused trim: %+v %v, want offsets 0 to 5", ps, err)
	}
	allow("delete")
	if start, err := alice.Admin().DeleteRecords(ctx, "orders", 0, 3); err != nil || start != 3 {
		t.Fatalf("alice trims with delete allowed: start %d, %v; want 3", start, err)
	}
}

// mtlsServer starts a secured node that takes client certificates, and
// returns a dialer of clients whose certificate's CN (the principal) is cn.
func mtlsServer(t *testing.T) (as func(cn string) *client.Client) {
	t.Helper()
	ca := testcerts.NewCA(t, "logd")
	certFile, keyFile := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File}
		secured(c)
	})
	dir := t.TempDir()
	return func(cn string) *client.Client {
		cert, key := ca.Pair(t, dir, cn)
		return nodetest.TLSClient(t, s.Addr(), ca.File, cert, key)
	}
}

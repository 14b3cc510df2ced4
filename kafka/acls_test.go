package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// The ACL store behind aclCore: changing it needs alter on the cluster,
// listing it describe, as in the broker.
func (c aclCore) AddACLs(ctx context.Context, p Principal, acls ...auth.ACL) error {
	if err := c.check(p, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	return c.fakeCore.AddACLs(ctx, p, acls...)
}

func (c aclCore) RemoveACLs(ctx context.Context, p Principal, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := c.check(p, auth.OpAlter, auth.Cluster()); err != nil {
		return nil, err
	}
	return c.fakeCore.RemoveACLs(ctx, p, f)
}

func (c aclCore) ListACLs(ctx context.Context, p Principal, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := c.check(p, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	return c.fakeCore.ListACLs(ctx, p, f)
}

// described flattens DescribeACLs' answer to "principal permission
// operation type:pattern:name" strings.
func described(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) []string {
	t.Helper()
	rs, err := adm.DescribeACLs(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("describe: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			if d.Host != "*" {
				t.Errorf("host %q, want *", d.Host)
			}
			out = append(out, d.Principal+" "+d.Permission.String()+" "+d.Operation.String()+" "+d.Type.String()+":"+d.Pattern.String()+":"+d.Name)
		}
	}
	slices.Sort(out)
	return out
}

// anyPrincipal makes b a filter on any principal, permission and host.
func anyPrincipal(b *kadm.ACLBuilder) *kadm.ACLBuilder {
	return b.Allow().Deny().AllowHosts().DenyHosts()
}

// everyACL is the filter that matches every ACL.
func everyACL() *kadm.ACLBuilder {
	return anyPrincipal(kadm.NewACLs().AnyResource().Operations().ResourcePatternType(kadm.ACLPatternAny))
}

func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) error {
	t.Helper()
	rs, err := adm.CreateACLs(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// CreateAcls, DescribeAcls (ANY, a literal name, MATCH) and DeleteAcls
// against the fake core's ACL store, with kadm.
func TestACLsCreateDescribeDelete(t *testing.T) {
	f := newFakeCore()
	s := startServer(t, f, Config{})
	adm := kadm.NewClient(newClient(t, s.Addr().String()))
	ctx := testCtx(t)
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Topics("ord").ResourcePatternType(kadm.ACLPatternPrefixed).Deny("User:bob").Operations(kadm.OpWrite),
		kadm.NewACLs().Topics("*").Allow("User:*").Operations(kadm.OpDescribe),
		kadm.NewACLs().Groups("g1").Allow("User:alice").Operations(kadm.OpAll),
		kadm.NewACLs().Clusters().Allow("User:admin").Operations(kadm.OpAlter),
	} {
		if err := createACLs(t, adm, b); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := f.acls.List(auth.ACLFilter{})
	if len(stored) != 6 {
		t.Fatalf("the store has %d ACLs, want 6: %v", len(stored), stored)
	}
	all := described(t, adm, everyACL())
	want := []string{
		"User:* ALLOW DESCRIBE TOPIC:LITERAL:*",
		"User:admin ALLOW ALTER CLUSTER:LITERAL:kafka-cluster",
		"User:alice ALLOW ALL GROUP:LITERAL:g1",
		"User:alice ALLOW DESCRIBE TOPIC:LITERAL:orders",
		"User:alice ALLOW READ TOPIC:LITERAL:orders",
		"User:bob DENY WRITE TOPIC:PREFIXED:ord",
	}
	if !slices.Equal(all, want) {
		t.Errorf("described\n%q\nwant\n%q", all, want)
	}
	lit := described(t, adm, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts().Operations(kadm.OpRead))
	if !slices.Equal(lit, want[4:5]) {
		t.Errorf("literal orders, alice, read: %q", lit)
	}
	match := described(t, adm, anyPrincipal(kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternMatch).Operations()))
	if w := []string{want[0], want[3], want[4], want[5]}; !slices.Equal(match, w) {
		t.Errorf("MATCH orders:\n%q\nwant\n%q", match, w)
	}

	del, err := adm.DeleteACLs(ctx, anyPrincipal(kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternMatch).Operations()))
	if err != nil {
		t.Fatal(err)
	}
	if len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 4 {
		t.Fatalf("delete MATCH orders: %+v", del)
	}
	left := described(t, adm, everyACL())
	if !slices.Equal(left, want[1:3]) {
		t.Errorf("left after the delete: %q", left)
	}
	del, err = adm.DeleteACLs(ctx, anyPrincipal(kadm.NewACLs().Groups("g1").Operations()))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("delete group g1: %+v, %v", del, err)
	}
}

// What logd cannot express is refused with INVALID_REQUEST and a message
// saying what, and stores nothing.
func TestACLsRefuseWhatLogdLacks(t *testing.T) {
	f := newFakeCore()
	s := startServer(t, f, Config{})
	cl := newClient(t, s.Addr().String())
	adm := kadm.NewClient(cl)
	for name, b := range map[string]*kadm.ACLBuilder{
		"host":           kadm.NewACLs().Topics("t").Allow("User:a").AllowHosts("10.0.0.1").Operations(kadm.OpRead),
		"operation":      kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpIdempotentWrite),
		"principal type": kadm.NewACLs().Topics("t").Allow("Group:a").Operations(kadm.OpRead),
		"cluster name":   kadm.NewACLs().Clusters().ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:a").Operations(kadm.OpAlter),
	} {
		err := createACLs(t, adm, b)
		if !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
		}
	}
	if stored, _ := f.acls.List(auth.ACLFilter{}); len(stored) != 0 {
		t.Errorf("refused creations stored %v", stored)
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Host = kmsg.StringPtr("10.0.0.1")
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil {
		t.Errorf("describe with a host: code %d, message %v; want INVALID_REQUEST with a message", resp.ErrorCode, resp.ErrorMessage)
	}
}

// A principal that may not alter or describe the cluster is refused with
// CLUSTER_AUTHORIZATION_FAILED; the ACLs are unchanged.
func TestACLsRefusedPrincipal(t *testing.T) {
	core := aclCore{newFakeCore()}
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, core: core})
	addr := ss.s.Addr().String()
	ctx := testCtx(t)
	mallory := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "mallory", "m4llory"))))
	err := createACLs(t, mallory, kadm.NewACLs().Topics("secret").Allow("User:mallory").Operations(kadm.OpRead))
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("mallory creates an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	rs, err := mallory.DescribeACLs(ctx, everyACL())
	if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("mallory describes the ACLs: %+v, %v; want CLUSTER_AUTHORIZATION_FAILED", rs, err)
	}
	alice := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "alice", "s3cret"))))
	if err := createACLs(t, alice, kadm.NewACLs().Topics("t").Allow("User:bob").Operations(kadm.OpRead)); err != nil {
		t.Fatalf("alice creates an ACL: %v", err)
	}
	del, err := mallory.DeleteACLs(ctx, everyACL())
	if err != nil || len(del) != 1 || !errors.Is(del[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("mallory deletes the ACLs: %+v, %v; want CLUSTER_AUTHORIZATION_FAILED", del, err)
	}
	if stored, _ := core.acls.List(auth.ACLFilter{}); len(stored) != 1 {
		t.Errorf("the store has %v, want alice's one ACL", stored)
	}
}

// End to end on a real broker with --auth required and --authz on: the
// super user creates an ACL through Kafka and the broker's ListACLs (what
// `logd acl list` reads) shows it; a user without alter on the cluster is
// refused.
func TestACLsRealBroker(t *testing.T) {
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Logger: quietLogger(), Auth: broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Config{Core: b, Logger: quietLogger(), Gate: b.Gate()})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Ready(broker.Node{KafkaAddr: s.AdvertisedAddr()})
	t.Cleanup(func() {
		b.Shutdown()
		s.Close()
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	addr := s.AdvertisedAddr()
	admin := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw"))))
	if err := createACLs(t, admin, kadm.NewACLs().Topics("logs-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:eve").Operations(kadm.OpRead)); err != nil {
		t.Fatalf("the super user creates an ACL: %v", err)
	}
	got, err := b.ListACLs(ctx, "User:admin", auth.ACLFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := auth.ACL{Principal: auth.User("eve"), Permission: auth.Allow, Operation: auth.OpRead,
		ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, Name: "logs-"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the broker lists %v, want [%v]", got, want)
	}
	eve := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA512, "eve", "eve-pw"))))
	err = createACLs(t, eve, kadm.NewACLs().Topics("logs-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:eve").Operations(kadm.OpAll))
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("eve creates an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if got, _ := b.ListACLs(ctx, "User:admin", auth.ACLFilter{}); len(got) != 1 {
		t.Errorf("after eve's refused creation the broker lists %v", got)
	}
	rs := described(t, admin, anyPrincipal(kadm.NewACLs().Topics("logs-app").ResourcePatternType(kadm.ACLPatternMatch).Operations()))
	if !slices.Equal(rs, []string{"User:eve ALLOW READ TOPIC:PREFIXED:logs-"}) {
		t.Errorf("the super user describes MATCH logs-app: %q", rs)
	}
}

// The ACL APIs' error codes: a node that does not lead the metadata is
// NOT_CONTROLLER (with or without a known leader), a refusal
// CLUSTER_AUTHORIZATION_FAILED, a bad ACL INVALID_REQUEST.
func TestACLCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{fmt.Errorf("add: %w", &NotLeaderError{Leader: Node{ID: "n2"}}), kerr.NotController},
		{&NotLeaderError{}, kerr.NotController},
		{fmt.Errorf("%w: %w", ErrDenied, &auth.DeniedError{Principal: auth.User("eve"), Operation: auth.OpAlter, Resource: auth.Cluster()}), kerr.ClusterAuthorizationFailed},
		{ErrDenied, kerr.ClusterAuthorizationFailed},
		{aclErrorf("host %q", "h"), kerr.InvalidRequest},
		{fmt.Errorf("%w: bad", kind.ErrInvalidArgument), kerr.InvalidRequest},
	} {
		if got := aclCode(c.err); got != c.want.Code {
			t.Errorf("aclCode(%v) = %v, want %v", c.err, kerr.ErrorForCode(got), c.want)
		}
	}
}

// Every advertised version round-trips: v0 (no pattern type on the wire:
// literal), v1 (pattern types), v2 and v3 (flexible).
func TestACLsEveryVersion(t *testing.T) {
	f := newFakeCore()
	s := startServer(t, f, Config{})
	for v := int16(0); v <= 3; v++ {
		vs := kversion.Stable()
		for key := int16(29); key <= 31; key++ {
			vs.SetMaxKeyVersion(key, v)
		}
		cl := newClient(t, s.Addr().String(), kgo.MaxVersions(vs))
		ctx := testCtx(t)
		create := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeTopic, "t", "User:a", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		create.Creations = append(create.Creations, c)
		cr, err := create.RequestWith(ctx, cl)
		if err != nil || len(cr.Results) != 1 || cr.Results[0].ErrorCode != 0 {
			t.Fatalf("v%d create: %+v, %v", v, cr, err)
		}
		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.ResourceType, describe.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("t")
		describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dr, err := describe.RequestWith(ctx, cl)
		if err != nil || dr.ErrorCode != 0 || len(dr.Resources) != 1 || len(dr.Resources[0].ACLs) != 1 ||
			dr.Resources[0].ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
			t.Fatalf("v%d describe: %+v, %v", v, dr, err)
		}
		del := kmsg.NewPtrDeleteACLsRequest()
		filter := kmsg.NewDeleteACLsRequestFilter()
		filter.ResourceType, filter.Operation, filter.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if v > 0 {
			filter.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		}
		del.Filters = append(del.Filters, filter)
		rr, err := del.RequestWith(ctx, cl)
		if err != nil || len(rr.Results) != 1 || rr.Results[0].ErrorCode != 0 || len(rr.Results[0].MatchingACLs) != 1 {
			t.Fatalf("v%d delete: %+v, %v", v, rr, err)
		}
		if create.Version != v || describe.Version != v || del.Version != v {
			t.Fatalf("sent versions %d, %d, %d, want %d", create.Version, describe.Version, del.Version, v)
		}
	}
}

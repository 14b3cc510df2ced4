package auth

import (
	"errors"
	"fmt"
	"testing"
)

var (
	alice = User("alice")
	bob   = User("bob")
	root  = User("root")
)

// requestOps are the operations a request can ask for on each resource
// type (OpAll is only ever granted).
func requestOps(rt ResourceType) []Operation {
	var out []Operation
	for _, op := range supportedOperations[rt] {
		if op != OpAll {
			out = append(out, op)
		}
	}
	return out
}

func resourceOf(rt ResourceType, name string) Resource {
	if rt == ResourceCluster {
		return Cluster()
	}
	return Resource{Type: rt, Name: name}
}

func aclOn(p Principal, perm Permission, op Operation, rt ResourceType, pt PatternType, name string) ACL {
	if rt == ResourceCluster {
		name, pt = ClusterName, PatternLiteral
	}
	return ACL{Principal: p, Permission: perm, Operation: op, ResourceType: rt, PatternType: pt, Name: name}
}

// authorizer is an Authorizer under --authz on over acls, with root as a
// super user.
func authorizer(t *testing.T, acls ...ACL) *Authorizer {
	t.Helper()
	store := NewMemoryACLStore()
	if err := store.Add(acls...); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthorizer(AuthorizerConfig{Mode: AuthzOn, SuperUsers: []Principal{root}, ACLs: store})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestACLMatrix: for every operation on every resource type, the ways an
// ACL set can answer.
func TestACLMatrix(t *testing.T) {
	for _, rt := range []ResourceType{ResourceTopic, ResourceGroup, ResourceCluster} {
		for _, op := range requestOps(rt) {
			r := resourceOf(rt, "orders")
			cases := []struct {
				name  string
				acls  []ACL
				who   Principal
				allow bool
			}{
				{"no ACL", nil, alice, false},
				{"allow", []ACL{aclOn(alice, Allow, op, rt, PatternLiteral, "orders")}, alice, true},
				{"allow for another principal", []ACL{aclOn(bob, Allow, op, rt, PatternLiteral, "orders")}, alice, false},
				{"allow all operations", []ACL{aclOn(alice, Allow, OpAll, rt, PatternLiteral, "orders")}, alice, true},
				{"allow every principal", []ACL{aclOn(AnyUser, Allow, op, rt, PatternLiteral, "orders")}, Anonymous, true},
				{"wildcard name", []ACL{aclOn(alice, Allow, op, rt, PatternLiteral, Wildcard)}, alice, true},
				{"deny beats wildcard allow", []ACL{
					aclOn(AnyUser, Allow, OpAll, rt, PatternLiteral, Wildcard),
					aclOn(alice, Deny, op, rt, PatternLiteral, "orders")}, alice, false},
				{"others keep the wildcard allow", []ACL{
					aclOn(AnyUser, Allow, OpAll, rt, PatternLiteral, Wildcard),
					aclOn(alice, Deny, op, rt, PatternLiteral, "orders")}, bob, true},
				{"deny all beats allow", []ACL{
					aclOn(alice, Allow, op, rt, PatternLiteral, "orders"),
					aclOn(alice, Deny, OpAll, rt, PatternLiteral, "orders")}, alice, false},
				{"deny for every principal", []ACL{
					aclOn(alice, Allow, op, rt, PatternLiteral, "orders"),
					aclOn(AnyUser, Deny, op, rt, PatternLiteral, Wildcard)}, alice, false},
				{"super user despite deny", []ACL{aclOn(root, Deny, OpAll, rt, PatternLiteral, Wildcard)}, root, true},
			}
			if rt != ResourceCluster {
				cases = append(cases, []struct {
					name  string
					acls  []ACL
					who   Principal
					allow bool
				}{
					{"allow on another name", []ACL{aclOn(alice, Allow, op, rt, PatternLiteral, "order")}, alice, false},
					{"prefix allow", []ACL{aclOn(alice, Allow, op, rt, PatternPrefixed, "ord")}, alice, true},
					{"whole name as prefix", []ACL{aclOn(alice, Allow, op, rt, PatternPrefixed, "orders")}, alice, true},
					{"longer prefix", []ACL{aclOn(alice, Allow, op, rt, PatternPrefixed, "orders-")}, alice, false},
					{"prefix deny beats literal allow", []ACL{
						aclOn(alice, Allow, op, rt, PatternLiteral, "orders"),
						aclOn(alice, Deny, op, rt, PatternPrefixed, "or")}, alice, false},
				}...)
			}
			for _, tc := range cases {
				err := authorizer(t, tc.acls...).Authorize(Identity{Principal: tc.who}, op, r)
				if tc.allow != (err == nil) {
					t.Errorf("%v %v, %s: %v, want allowed=%v", op, rt, tc.name, err, tc.allow)
				}
				var de *DeniedError
				if err != nil && (!errors.As(err, &de) || de.Operation != op || de.Resource != r || !errors.Is(err, ErrDenied)) {
					t.Errorf("%v %v, %s: error %v does not name the operation and resource", op, rt, tc.name, err)
				}
			}
		}
	}
}

// TestDescribeImplications pins which implications are implemented: an
// allow of read, write, delete or alter allows describe; create does not;
// deny ACLs imply nothing (Kafka's rules).
func TestDescribeImplications(t *testing.T) {
	cases := []struct {
		acls     []ACL
		op       Operation
		allowed  bool
		describe string
	}{
		{[]ACL{aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "t")}, OpDescribe, true, "read implies describe"},
		{[]ACL{aclOn(alice, Allow, OpWrite, ResourceTopic, PatternLiteral, "t")}, OpDescribe, true, "write implies describe"},
		{[]ACL{aclOn(alice, Allow, OpDelete, ResourceTopic, PatternLiteral, "t")}, OpDescribe, true, "delete implies describe"},
		{[]ACL{aclOn(alice, Allow, OpAlter, ResourceTopic, PatternLiteral, "t")}, OpDescribe, true, "alter implies describe"},
		{[]ACL{aclOn(alice, Allow, OpCreate, ResourceTopic, PatternLiteral, "t")}, OpDescribe, false, "create does not imply describe"},
		{[]ACL{aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "t")}, OpWrite, false, "read does not imply write"},
		{[]ACL{aclOn(alice, Allow, OpDescribe, ResourceTopic, PatternLiteral, "t")}, OpRead, false, "describe does not imply read"},
		{[]ACL{aclOn(alice, Allow, OpWrite, ResourceTopic, PatternLiteral, "t"), aclOn(alice, Deny, OpRead, ResourceTopic, PatternLiteral, "t")},
			OpDescribe, true, "deny read does not deny describe"},
		{[]ACL{aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "t"), aclOn(alice, Deny, OpDescribe, ResourceTopic, PatternLiteral, "t")},
			OpDescribe, false, "deny describe beats implied describe"},
		{[]ACL{aclOn(alice, Allow, OpRead, ResourceGroup, PatternLiteral, "t")}, OpDescribe, true, "group read implies describe"},
	}
	for _, tc := range cases {
		r := Topic("t")
		if tc.acls[0].ResourceType == ResourceGroup {
			r = Group("t")
		}
		if got := authorizer(t, tc.acls...).Allowed(alice, tc.op, r); got != tc.allowed {
			t.Errorf("%s: allowed=%v", tc.describe, got)
		}
	}
}

func TestAuthorizerModes(t *testing.T) {
	deny := aclOn(alice, Deny, OpAll, ResourceTopic, PatternLiteral, Wildcard)
	off, err := NewAuthorizer(AuthorizerConfig{Mode: AuthzOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := off.Authorize(Identity{Principal: alice}, OpDelete, Topic("t")); err != nil {
		t.Errorf("--authz off refused: %v", err)
	}
	if _, err := NewAuthorizer(AuthorizerConfig{Mode: AuthzOn}); !errors.Is(err, ErrInvalid) {
		t.Errorf("--authz on without ACLs: %v", err)
	}
	on := authorizer(t, deny, aclOn(AnyUser, Allow, OpAll, ResourceTopic, PatternLiteral, Wildcard))
	if on.Allowed(alice, OpAll, Topic("t")) {
		t.Error("a request for OpAll was allowed")
	}
	anonOnly := authorizer(t, aclOn(Anonymous, Deny, OpRead, ResourceTopic, PatternLiteral, "t"),
		aclOn(AnyUser, Allow, OpRead, ResourceTopic, PatternLiteral, "t"))
	var de *DeniedError
	if err := anonOnly.Authorize(Identity{}, OpRead, Topic("t")); !errors.As(err, &de) || de.Principal != Anonymous {
		t.Errorf("a request from no principal is not judged as Anonymous: %v", err)
	}
	if err := on.AuthorizeContext(NewContext(t.Context(), Identity{Principal: alice}), OpRead, Topic("t")); err == nil {
		t.Error("the context's identity was not used")
	}
	if err := on.AuthorizeContext(t.Context(), OpRead, Topic("t")); err != nil {
		t.Errorf("a context without identity is Anonymous, whom User:* allows: %v", err)
	}
}

func TestACLValidate(t *testing.T) {
	good := aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "t")
	with := func(f func(*ACL)) ACL { a := good; f(&a); return a }
	cases := map[string]ACL{
		"no principal":            with(func(a *ACL) { a.Principal = Principal{} }),
		"no permission":           with(func(a *ACL) { a.Permission = 0 }),
		"unknown resource type":   with(func(a *ACL) { a.ResourceType = 9 }),
		"write on a group":        aclOn(alice, Allow, OpWrite, ResourceGroup, PatternLiteral, "g"),
		"create on a group":       aclOn(alice, Allow, OpCreate, ResourceGroup, PatternLiteral, "g"),
		"read on the cluster":     aclOn(alice, Allow, OpRead, ResourceCluster, PatternLiteral, ""),
		"cluster by another name": with(func(a *ACL) { a.ResourceType, a.Operation, a.Name = ResourceCluster, OpAlter, "c" }),
		"empty name":              with(func(a *ACL) { a.Name = "" }),
		"prefix *":                with(func(a *ACL) { a.PatternType, a.Name = PatternPrefixed, "*" }),
		"no pattern type":         with(func(a *ACL) { a.PatternType = 0 }),
		"control character":       with(func(a *ACL) { a.Name = "a\nb" }),
	}
	for name, a := range cases {
		if err := a.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := NewMemoryACLStore().Add(good, cases["write on a group"]); err == nil {
		t.Error("Add stored a batch with an invalid ACL")
	}
}

func TestMemoryACLStore(t *testing.T) {
	s := NewMemoryACLStore()
	a1 := aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "t")
	a2 := aclOn(alice, Deny, OpWrite, ResourceTopic, PatternPrefixed, "t")
	b1 := aclOn(bob, Allow, OpRead, ResourceGroup, PatternLiteral, "g")
	if err := s.Add(a1, a2, b1, a1); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ACLFilter{}); len(got) != 3 {
		t.Fatalf("list all: %v", got)
	}
	if got, _ := s.List(ACLFilter{Principal: alice}); len(got) != 2 || got[0] != a1 {
		t.Fatalf("list alice: %v", got)
	}
	removed, _ := s.Remove(ExactFilter(a2))
	if len(removed) != 1 || removed[0] != a2 {
		t.Fatalf("removed %v", removed)
	}
	if s.Index().Len() != 2 || !s.Index().Decide(alice, OpRead, Topic("t")).allowed() {
		t.Fatal("the index did not follow the removal")
	}
}

func (d Decision) allowed() bool { return d == Allowed }

func TestParseEnums(t *testing.T) {
	for _, s := range []string{"read", "WRITE", "Create", "delete", "alter", "describe", "all"} {
		if _, err := ParseOperation(s); err != nil {
			t.Error(err)
		}
	}
	_, err := ParseOperation("produce")
	if !errors.Is(err, ErrInvalid) || !contains(err.Error(), `"produce"`) || !contains(err.Error(), "read, write") {
		t.Errorf("bad operation: %v", err)
	}
	if rt, err := ParseResourceType("cluster"); err != nil || rt != ResourceCluster {
		t.Error(rt, err)
	}
	if _, err := ParseResourceType("user"); !errors.Is(err, ErrInvalid) {
		t.Error(err)
	}
	if p, err := ParsePermission("deny"); err != nil || p != Deny {
		t.Error(p, err)
	}
	if p, err := ParsePatternType("prefixed"); err != nil || p != PatternPrefixed {
		t.Error(p, err)
	}
}

func BenchmarkAuthorize10kACLs(b *testing.B) {
	var acls []ACL
	for i := range 10000 {
		acls = append(acls, aclOn(User(fmt.Sprintf("u%d", i%100)), Allow, OpRead, ResourceTopic, PatternLiteral, fmt.Sprintf("topic-%d", i)))
		if i%10 == 0 {
			acls = append(acls, aclOn(User(fmt.Sprintf("u%d", i%100)), Allow, OpWrite, ResourceTopic, PatternPrefixed, fmt.Sprintf("p%d-", i)))
		}
	}
	store := NewMemoryACLStore()
	if err := store.Add(acls...); err != nil {
		b.Fatal(err)
	}
	a, _ := NewAuthorizer(AuthorizerConfig{Mode: AuthzOn, ACLs: store})
	id := Identity{Principal: User("u42")}
	b.ResetTimer()
	for range b.N {
		if err := a.Authorize(id, OpRead, Topic("topic-4242")); err != nil {
			b.Fatal(err)
		}
	}
}

func TestACLEncodingRoundTripsAndRefusesCorruption(t *testing.T) {
	a := aclOn(alice, Deny, OpWrite, ResourceTopic, PatternPrefixed, "orders-")
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeACL(b); err != nil || got != a {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	edit := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	for name, bad := range map[string][]byte{
		"version 2":      edit(func(b []byte) []byte { b[0] = 2; return b }),
		"operation 9":    edit(func(b []byte) []byte { b[2] = 9; return b }),
		"truncated":      b[:len(b)-1],
		"trailing":       append(append([]byte(nil), b...), 'x'),
		"bad principal":  edit(func(b []byte) []byte { b[6] = 'G'; return b }),
		"huge length":    edit(func(b []byte) []byte { return append(b[:5], 0xff, 0xff, 0xff, 0xff, 0x0f) }),
		"overlong count": edit(func(b []byte) []byte { return append(append(b[:5], 0x8a, 0x00), b[6:]...) }),
	} {
		if _, err := DecodeACL(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := aclOn(alice, Allow, OpWrite, ResourceGroup, PatternLiteral, "g").MarshalBinary(); !errors.Is(err, ErrInvalid) {
		t.Errorf("encoding an invalid ACL: %v", err)
	}
}

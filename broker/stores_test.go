package broker_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
)

// The node's credential and ACL stores (what the SCRAM exchange and the
// authorizer read, and what a bootstrap writes) hold the same users and
// ACLs as the broker's methods, on both control planes: a user put there
// logs in with its password, is listed and deleted; an ACL added there
// is listed and removed.
func TestCredentialAndACLStores(t *testing.T) {
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			b := pl.open(t)
			cs := b.CredentialStore()
			c, err := auth.NewCredentials("pw", auth.DefaultIterations)
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.Put("dave", c); err != nil {
				t.Fatal(err)
			}
			if err := cs.Put("", c); !errors.Is(err, kind.ErrInvalidArgument) {
				t.Fatalf("put a user with no name: %v, want kind.ErrInvalidArgument", err)
			}
			got, err := cs.Lookup("dave")
			if err != nil {
				t.Fatal(err)
			}
			gotEnc, _ := got.MarshalBinary()
			wantEnc, _ := c.MarshalBinary()
			if len(wantEnc) == 0 || !bytes.Equal(gotEnc, wantEnc) {
				t.Fatal("the credentials looked up are not the ones put")
			}
			if us, err := cs.Users(); err != nil || !slices.Equal(us, []string{"dave"}) {
				t.Fatalf("users: %v %v", us, err)
			}
			// Put replaces.
			if err := cs.Put("dave", c); err != nil {
				t.Fatalf("put again: %v", err)
			}
			if err := cs.Delete("dave"); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.Lookup("dave"); !errors.Is(err, auth.ErrUnknownUser) {
				t.Fatalf("lookup a deleted user: %v, want ErrUnknownUser", err)
			}
			if err := cs.Delete("dave"); !errors.Is(err, auth.ErrUnknownUser) {
				t.Fatalf("delete twice: %v, want ErrUnknownUser", err)
			}

			as := b.ACLStore()
			a := allow(auth.OpRead, auth.Topic("t"))
			if err := as.Add(a); err != nil {
				t.Fatal(err)
			}
			if l, err := as.List(auth.ACLFilter{}); err != nil || len(l) != 1 || l[0] != a {
				t.Fatalf("list: %+v %v", l, err)
			}
			if r, err := as.Remove(auth.ExactFilter(a)); err != nil || len(r) != 1 || r[0] != a {
				t.Fatalf("remove: %+v %v", r, err)
			}
			if l, err := b.ListACLs(t.Context(), "", auth.ACLFilter{}); err != nil || len(l) != 0 {
				t.Fatalf("ACLs after remove: %+v %v, want none", l, err)
			}
		})
	}
}

// With --authz on, Allowed follows the ACLs (without an audit) and the
// node reports its policy: alice may read t only once an ACL allows it,
// and reading t allows nothing on u.
func TestAllowedFollowsTheACLs(t *testing.T) {
	b := openSecured(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	alice := broker.Principal(auth.User("alice").String())
	if cfg := b.AuthConfig(); cfg.Authz != auth.AuthzOn || cfg.Mode != auth.AuthRequired {
		t.Fatalf("auth config: %+v", cfg)
	}
	if b.Allowed(alice, auth.OpRead, auth.Topic("t")) {
		t.Fatal("alice may read t with no ACL")
	}
	if !b.Allowed(broker.Principal(auth.User("admin").String()), auth.OpRead, auth.Topic("t")) {
		t.Fatal("a super user may not read t")
	}
	if err := b.ACLStore().Add(allow(auth.OpRead, auth.Topic("t"))); err != nil {
		t.Fatal(err)
	}
	if !b.Allowed(alice, auth.OpRead, auth.Topic("t")) {
		t.Fatal("alice may not read t with an ACL that allows it")
	}
	if b.Allowed(alice, auth.OpRead, auth.Topic("u")) || b.Allowed(alice, auth.OpWrite, auth.Topic("t")) {
		t.Fatal("an ACL to read t allows more")
	}
	if b.Allowed("not a principal", auth.OpRead, auth.Topic("t")) {
		t.Fatal("a malformed principal is allowed")
	}
}

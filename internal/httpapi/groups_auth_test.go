package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/offsets"
)

// TestE2EGroupsRefusedPrincipal: a principal that may not describe a
// group is answered 403 for it and does not see it listed.
func TestE2EGroupsRefusedPrincipal(t *testing.T) {
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: broker.FsyncPolicy{Mode: broker.FsyncNever},
		Auth: broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"})
	t.Cleanup(func() {
		b.Shutdown()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	ctx := context.Background()
	const admin = broker.Principal("User:admin")
	c := broker.DefaultConfig("t")
	c.Partitions = 1
	if _, err := b.CreateTopic(ctx, admin, c); err != nil {
		t.Fatal(err)
	}
	if err := b.CommitOffsets(ctx, admin, "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 0}}); err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, b, Config{Principal: func(r *http.Request) broker.Principal {
		return broker.Principal(r.Header.Get("X-Test-Principal"))
	}})
	as := func(p string) map[string]string { return map[string]string{"X-Test-Principal": p} }
	var list struct {
		Groups []groupListingJSON `json:"groups"`
	}
	if st := do(t, "GET", srv.URL+"/v1/groups/g", "", as("User:alice"), nil); st != http.StatusForbidden {
		t.Fatalf("alice describes g: %d, want 403", st)
	}
	if st := do(t, "GET", srv.URL+"/v1/groups", "", as("User:alice"), &list); st != http.StatusOK || len(list.Groups) != 0 {
		t.Fatalf("alice lists %d %+v, want no group", st, list)
	}
	if st := do(t, "GET", srv.URL+"/v1/groups/g", "", as("User:admin"), nil); st != http.StatusOK {
		t.Fatalf("admin describes g: %d, want 200", st)
	}
	if st := do(t, "GET", srv.URL+"/v1/groups", "", as("User:admin"), &list); st != http.StatusOK || len(list.Groups) != 1 || list.Groups[0].State != "Empty" {
		t.Fatalf("admin lists %d %+v, want g (Empty)", st, list)
	}
}

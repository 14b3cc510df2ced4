package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

const (
	admin = broker.Principal("User:admin")
	alice = broker.Principal("User:alice")
)

// openSecured opens a single node in dir with --authz on and User:admin a
// super user.
func openSecured(t *testing.T, dir string) *broker.Broker {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: dir, Fsync: log.FsyncPolicy{Mode: log.FsyncNever},
		Auth: broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	return b
}

func allow(op auth.Operation, r auth.Resource) auth.ACL {
	return auth.ACL{Principal: auth.User("alice"), Permission: auth.Allow, Operation: op, ResourceType: r.Type,
		PatternType: auth.PatternLiteral, Name: r.Name}
}

// authCase is one broker method and what it needs.
type authCase struct {
	name  string
	needs []auth.ACL // the allows alice needs; the first is what a refusal names
	call  func(ctx context.Context, b *broker.Broker, pr broker.Principal) error
}

func authCases() []authCase { return append(dataCases(), adminCases()...) }

// dataCases are produce, fetch and their lookups.
func dataCases() []authCase {
	orders := auth.Topic("orders")
	return []authCase{
		{"produce", []auth.ACL{allow(auth.OpWrite, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "orders", Batch: records("x")})
			return err
		}},
		{"fetch", []auth.ACL{allow(auth.OpRead, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			res, err := b.Fetch(ctx, broker.FetchRequest{Principal: pr, Partitions: []broker.FetchPartition{{Topic: "orders"}}})
			if err != nil {
				return err
			}
			res.Release()
			return res.Partitions[0].Err
		}},
		{"open reader", []auth.ACL{allow(auth.OpRead, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			r, err := b.OpenReader(ctx, pr, "orders", 0, 0, 0)
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"describe topic", []auth.ACL{allow(auth.OpDescribe, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.Topic(ctx, pr, "orders")
			return err
		}},
		{"list offsets", []auth.ACL{allow(auth.OpDescribe, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.ListOffsets(ctx, pr, "orders", nil, broker.Latest)
			return err
		}},
		{"partition count", []auth.ACL{allow(auth.OpDescribe, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.PartitionCount(ctx, pr, "orders")
			return err
		}},
		{"resolve reset", []auth.ACL{allow(auth.OpDescribe, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.ResolveReset(ctx, pr, "orders", nil, offsets.ResetSpec{Kind: offsets.ResetEarliest})
			return err
		}},
	}
}

// adminCases are the cluster's, the users' and the ACLs' methods, and the
// topic admin.
func adminCases() []authCase {
	orders, g := auth.Topic("orders"), auth.Group("g")
	createCfg := func(name string) partition.TopicConfig {
		c := partition.DefaultConfig(name)
		c.Partitions = 1
		return c
	}
	grown := int32(1)
	return []authCase{
		{"create topic", []auth.ACL{allow(auth.OpCreate, auth.Topic("fresh"))}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.CreateTopic(ctx, pr, createCfg("fresh"))
			return err
		}},
		{"alter topic", []auth.ACL{allow(auth.OpAlter, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			ms := int64(60000)
			_, err := b.AlterTopic(ctx, pr, "orders", partition.ConfigChange{RetentionMs: &ms})
			return err
		}},
		{"add partitions", []auth.ACL{allow(auth.OpAlter, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			grown++ // each call asks for one more than the last
			_, err := b.AddPartitions(ctx, pr, "orders", grown)
			return err
		}},
		{"delete topic", []auth.ACL{allow(auth.OpDelete, auth.Topic("doomed"))}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.DeleteTopic(ctx, pr, "doomed")
		}},
		{"commit offsets", []auth.ACL{allow(auth.OpRead, g), allow(auth.OpRead, orders)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.CommitOffsets(ctx, pr, "g", "", -1, []offsets.Committed{{Topic: "orders", Offset: 0}})
		}},
		{"fetch offsets", []auth.ACL{allow(auth.OpDescribe, g)}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.FetchOffsets(ctx, pr, "g", nil)
			return err
		}},
		{"cluster status", []auth.ACL{allow(auth.OpDescribe, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.ClusterStatus(ctx, pr, true)
			return err
		}},
		{"join", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.Join(ctx, pr, broker.Node{ID: "2"}, false)
		}},
		{"remove node", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.RemoveNode(ctx, pr, "2")
			return err
		}},
		{"create user", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.CreateUser(ctx, pr, "carol", "pw-carol", true)
		}},
		{"delete user", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.DeleteUser(ctx, pr, "bob")
		}},
		{"list users", []auth.ACL{allow(auth.OpDescribe, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.Users(ctx, pr)
			return err
		}},
		{"add ACLs", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			return b.AddACLs(ctx, pr, allow(auth.OpRead, auth.Topic("other")))
		}},
		{"remove ACLs", []auth.ACL{allow(auth.OpAlter, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.RemoveACLs(ctx, pr, auth.ACLFilter{Name: "other"})
			return err
		}},
		{"list ACLs", []auth.ACL{allow(auth.OpDescribe, auth.Cluster())}, func(ctx context.Context, b *broker.Broker, pr broker.Principal) error {
			_, err := b.ListACLs(ctx, pr, auth.ACLFilter{})
			return err
		}},
	}
}

// checkDenied fails unless err is a denial of op on a resource of type rt,
// matching both ways the front-ends test it.
func checkDenied(t *testing.T, what string, err error, want auth.ACL) {
	t.Helper()
	var de *auth.DeniedError
	if !errors.Is(err, broker.ErrDenied) || !errors.As(err, &de) {
		t.Fatalf("%s: %v, want a denial", what, err)
	}
	if de.Resource.Type != want.ResourceType || de.Operation != want.Operation || de.Principal != auth.User("alice") {
		t.Fatalf("%s: denied %v %v on %v, want %v %v on %v", what, de.Principal, de.Operation, de.Resource, "User:alice", want.Operation, want.ResourceType)
	}
}

// Every method that takes a Principal: without an ACL alice is refused
// (naming the operation and resource), with a deny she is refused even
// under a wildcard allow of everything, with the allows she passes the
// check; the super user passes without any ACL.
func TestAuthorizationMatrix(t *testing.T) {
	b := openSecured(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	for _, name := range []string{"orders", "doomed"} {
		c := partition.DefaultConfig(name)
		c.Partitions = 1
		if _, err := b.CreateTopic(ctx, admin, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.CreateUser(ctx, admin, "bob", "pw-bob", false); err != nil {
		t.Fatal(err)
	}
	everything := []auth.ACL{}
	for _, rt := range []auth.ResourceType{auth.ResourceTopic, auth.ResourceGroup, auth.ResourceCluster} {
		name := auth.Wildcard
		if rt == auth.ResourceCluster {
			name = auth.ClusterName
		}
		everything = append(everything, auth.ACL{Principal: auth.AnyUser, Permission: auth.Allow, Operation: auth.OpAll,
			ResourceType: rt, PatternType: auth.PatternLiteral, Name: name})
	}
	for _, c := range authCases() {
		t.Run(c.name, func(t *testing.T) {
			checkDenied(t, "no ACL", c.call(ctx, b, alice), c.needs[0])
			deny := c.needs[0]
			deny.Permission = auth.Deny
			if err := b.AddACLs(ctx, admin, append(append([]auth.ACL{deny}, everything...), c.needs...)...); err != nil {
				t.Fatal(err)
			}
			checkDenied(t, "deny under a wildcard allow", c.call(ctx, b, alice), c.needs[0])
			if _, err := b.RemoveACLs(ctx, admin, auth.ExactFilter(deny)); err != nil {
				t.Fatal(err)
			}
			for _, e := range everything {
				if _, err := b.RemoveACLs(ctx, admin, auth.ExactFilter(e)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.call(ctx, b, alice); errors.Is(err, broker.ErrDenied) {
				t.Fatalf("with %v: %v", c.needs, err)
			}
			for _, a := range c.needs {
				if _, err := b.RemoveACLs(ctx, admin, auth.ExactFilter(a)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.call(ctx, b, admin); errors.Is(err, broker.ErrDenied) {
				t.Fatalf("super user: %v", err)
			}
		})
	}
	// Denials are counted.
	n := deniedTotal(t, b)
	if n < float64(2*len(authCases())) {
		t.Fatalf("logd_authz_denied_total = %v, want at least %d", n, 2*len(authCases()))
	}
}

// deniedTotal sums logd_authz_denied_total over its labels.
func deniedTotal(t *testing.T, b *broker.Broker) float64 {
	t.Helper()
	mfs, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "logd_authz_denied_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
)

// peerBroker opens a broker of a cluster: the first bootstraps it, the
// others join through its Raft address. supers are its super users.
func peerBroker(t *testing.T, id, join string, supers ...auth.Principal) *broker.Broker {
	t.Helper()
	cc := &cluster.Config{NodeID: id, RaftAddr: "127.0.0.1:0", Bootstrap: join == "", Join: join}
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: log.FsyncPolicy{Mode: log.FsyncNever}, Cluster: cc,
		Auth: broker.AuthConfig{Mode: auth.AuthOptional, Authz: auth.AuthzOn, SuperUsers: supers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	return b
}

// waitFor retries fn until it holds, for up to 30 s.
func waitFor(t *testing.T, what string, fn func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !fn(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
	}
}

// A request a node that does not lead the metadata refuses is carried to
// the leader over the peer service with its principal as data, and the
// leader authorizes that principal: bob, a super user on the follower
// only, is let through there and refused by the leader, for a topic
// change the broker passes on itself and for a write passed on through
// Forward; the admin's requests pass.
func TestPeerCallsCarryThePrincipal(t *testing.T) {
	admin, bob := auth.User("admin"), auth.User("bob")
	leader := peerBroker(t, "n1", "", admin)
	waitFor(t, "n1 leads the metadata", leader.Cluster().IsMetaLeader)
	follower := peerBroker(t, "n2", leader.Cluster().RaftAddr(), admin, bob)
	waitFor(t, "n2 joined and knows the leader", func() bool {
		return slices.Equal(follower.Members(), []string{"n1", "n2"}) && follower.Cluster().MetaLeader().RaftAddr != ""
	})
	if !leader.Cluster().IsMetaLeader() {
		t.Fatal("n1 no longer leads the metadata")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pAdmin, pBob := broker.Principal(admin.String()), broker.Principal(bob.String())

	if err := follower.Forward().CreateUser(ctx, pAdmin, "alice", "alice-pw", false); err != nil {
		t.Fatalf("the admin creates a user through the follower: %v", err)
	}
	names, err := leader.Users(ctx, pAdmin)
	if err != nil || !slices.Contains(names, "alice") {
		t.Fatalf("the leader lists users %v, %v; want alice", names, err)
	}
	err = follower.Forward().CreateUser(ctx, pAdmin, "alice", "other-pw", false)
	if !errors.Is(err, broker.ErrUserExists) {
		t.Fatalf("creating alice again through the follower: %v, want ErrUserExists", err)
	}

	_, err = follower.CreateTopic(ctx, pBob, partition.TopicConfig{Name: "bobs", Partitions: 1, Replicas: 1})
	if !errors.Is(err, broker.ErrDenied) || !strings.Contains(err.Error(), "User:bob") {
		t.Fatalf("bob's create passed on to the leader: %v, want denied naming User:bob", err)
	}
	err = follower.Forward().AddACLs(ctx, pBob, auth.ACL{Principal: bob, Permission: auth.Allow, Operation: auth.OpAll,
		ResourceType: auth.ResourceCluster, PatternType: auth.PatternLiteral, Name: "kafka-cluster"})
	if !errors.Is(err, broker.ErrDenied) || !strings.Contains(err.Error(), "User:bob") {
		t.Fatalf("bob grants himself everything through the follower: %v, want denied naming User:bob", err)
	}
	if acls, err := leader.ListACLs(ctx, pAdmin, auth.ACLFilter{}); err != nil || len(acls) != 0 {
		t.Fatalf("ACLs on the leader: %v, %v; want none", acls, err)
	}
	cfg := partition.DefaultConfig("admins")
	cfg.Replicas = 2
	c, err := follower.CreateTopic(ctx, pAdmin, cfg)
	if err != nil || c.Name != "admins" || c.Replicas != 2 {
		t.Fatalf("the admin's create through the follower: %+v, %v", c, err)
	}
	if _, err := follower.CreateTopic(ctx, pAdmin, cfg); !errors.Is(err, broker.ErrTopicExists) {
		t.Fatalf("the admin's second create through the follower: %v, want ErrTopicExists", err)
	}
}

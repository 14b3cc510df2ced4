package server_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A cluster with mutual TLS between everyone: nodes present certificates
// with CN "node" (a super user, as docs/security.md says to configure), and
// clients theirs; --auth optional, --authz on. A user created through one
// node logs in on another; a request passed on to the metadata leader (over
// the peer service) is authorized there as its original principal, not as
// the node that passed it on; no client can pose as another principal.
func TestAuthClusterForwardsOriginalPrincipal(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	dir := t.TempDir()
	nodeCert, nodeKey := ca.Pair(t, dir, "node")
	peer, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: nodeCert, KeyFile: nodeKey})
	if err != nil {
		t.Fatal(err)
	}
	// bobSuper lists the nodes on which User:bob is a super user (read
	// when a node starts).
	var mu sync.Mutex
	bobSuper := map[string]bool{}
	c := nodetest.NewCluster(t, 3, func(cfg *node.Config) {
		cfg.TLS = tlsconfig.ServerFiles{CertFile: nodeCert, KeyFile: nodeKey, ClientCAFile: ca.File}
		cfg.PeerTLS = peer
		supers := []auth.Principal{auth.User("node"), auth.User("admin")}
		mu.Lock()
		if bobSuper[cfg.Cluster.NodeID] {
			supers = append(supers, auth.User("bob"))
		}
		mu.Unlock()
		cfg.Auth = broker.AuthConfig{Mode: auth.AuthOptional, Authz: auth.AuthzOn, SuperUsers: supers}
	})
	ctx := ctx(t)
	leader, followers := metaLeader(t, c)
	as := func(n *nodetest.Node, cn string, creds ...string) *client.Client {
		return certClient(t, ca, dir, n.APIAddr, cn, creds...)
	}
	// The admin creates alice through a follower: forwarded to the leader.
	if err := as(followers[0], "admin").Admin().CreateUser(ctx, "alice", "alice-pw", false); err != nil {
		t.Fatalf("create a user through a follower: %v", err)
	}
	if err := as(followers[0], "admin").Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow",
		Operation: "create", ResourceType: "topic", Pattern: "prefixed", Name: "a-"}); err != nil {
		t.Fatal(err)
	}
	// alice logs in on the other follower (its metadata has her once it
	// applied the command) and creates a topic through it: forwarded with
	// her credentials, allowed at the leader by her ACL.
	alice := as(followers[1], "alice-laptop", "alice", "alice-pw")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := alice.Admin().ListTopics(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrUnauthenticated) || time.Now().After(deadline) {
			t.Fatalf("alice on another node: %v", err)
		}
	}
	// ACLs reach each node as it applies the metadata: wait for this one.
	waitACLs(t, as(followers[1], "admin"), "User:alice", 1)
	if _, err := alice.Admin().CreateTopic(ctx, "a-orders", client.TopicOptions{Partitions: 1, Replicas: 1}); err != nil {
		t.Fatalf("alice creates a-orders through a follower: %v", err)
	}
	_, err = alice.Admin().CreateTopic(ctx, "b-orders", client.TopicOptions{Partitions: 1, Replicas: 1})
	wantDenied(t, "alice creates b-orders", err, "User:alice", "create", "b-orders")

	// bob is a super user on one follower only: that follower lets his
	// create through and forwards it; the leader, where he is nobody,
	// refuses it, since the forward names bob and not the node.
	mu.Lock()
	bobSuper[followers[0].ID] = true
	mu.Unlock()
	followers[0].Stop()
	followers[0].Restart()
	bob := as(followers[0], "bob")
	_, err = bob.Admin().CreateTopic(ctx, "bobs", client.TopicOptions{Partitions: 1, Replicas: 1})
	wantDenied(t, "bob's create forwarded to the leader", err, "User:bob", "create", "bobs")

	// No caller can pose as another principal through the public API.
	checkPosing(t, ca, dir, leader.APIAddr)
}

// metaLeader waits for a metadata leader and returns it and the others.
func metaLeader(t *testing.T, c *nodetest.Cluster) (*nodetest.Node, []*nodetest.Node) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var lead *nodetest.Node
		var rest []*nodetest.Node
		for _, n := range c.Nodes() {
			if s := n.Server(); s != nil && s.Broker().Cluster().IsMetaLeader() {
				lead = n
			} else {
				rest = append(rest, n)
			}
		}
		if lead != nil {
			return lead, rest
		}
	}
	t.Fatal("no metadata leader")
	return nil, nil
}

// checkPosing: the public API lets no caller speak for another
// principal: the metadata key a node once used to name the principal of a
// request it forwarded is ignored, whoever sends it. bob (no rights)
// naming the admin stays bob; the admin (a super user, who could alter
// the cluster) naming a principal without rights stays the admin.
func checkPosing(t *testing.T, ca *testcerts.CA, dir, addr string) {
	t.Helper()
	ctx := ctx(t)
	call := func(cn, claim, topic string) error {
		cert, key := ca.Pair(t, dir, cn)
		tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: cert, KeyFile: key})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		posing := metadata.AppendToOutgoingContext(ctx, "logd-forwarded-principal", claim, "logd-forwarded", "1")
		_, err = pb.NewAdminClient(cc).CreateTopic(posing, &pb.CreateTopicRequest{Name: topic, Partitions: 1, Replicas: 1})
		return err
	}
	wantDenied(t, "bob posing as the admin", call("bob", "User:admin", "posed"), "User:bob", "create", "posed")
	if err := call("admin", "User:nobody", "admin-posed"); err != nil {
		t.Fatalf("the admin naming User:nobody in the metadata was not served as the admin: %v", err)
	}
}

// certClient dials addr only (forwarding is the node's, not the
// client's) with a certificate of CN cn, and a user and password when
// creds gives them.
func certClient(t *testing.T, ca *testcerts.CA, dir, addr, cn string, creds ...string) *client.Client {
	t.Helper()
	cert, key := ca.Pair(t, dir, cn)
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.Option{client.WithTLS(tc), client.WithRetryTimeout(10 * time.Second)}
	if len(creds) == 2 {
		opts = append(opts, client.WithCredentials(creds[0], creds[1]))
	}
	cl, err := client.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// waitACLs waits until the node c talks to lists n ACLs of principal.
func waitACLs(t *testing.T, c *client.Client, principal string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		acls, err := c.Admin().ListACLs(ctx(t), client.ACL{Principal: principal})
		if err == nil && len(acls) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node lists %v %v, want %d ACLs of %s", acls, err, n, principal)
		}
	}
}

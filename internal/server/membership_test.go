package server_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// checkMembership fails unless every node lists exactly n1 and n2 with
// their own addresses, and the metadata group has no voter ghost.
func checkMembership(t *testing.T, c *nodetest.Cluster) {
	t.Helper()
	// A node's view lags the metadata leader's by a replication round.
	waitUntil(t, 30*time.Second, "every node lists n1 and n2 as members", func() bool {
		for _, n := range c.Nodes() {
			if !slices.Equal(n.Server().ClusterMembers(), []string{"n1", "n2"}) {
				return false
			}
		}
		return true
	})
	for _, n := range c.Nodes() {
		cl := n.Server().Broker().Cluster()
		if got := n.Server().ClusterMembers(); !slices.Equal(got, []string{"n1", "n2"}) {
			t.Fatalf("%s lists members %v, want n1 n2", n.ID, got)
		}
		for _, m := range c.Nodes() {
			if got := cl.State().Nodes[m.ID]; got.RaftAddr != m.RaftAddr || got.APIAddr != m.APIAddr {
				t.Fatalf("%s lists %s at %s / %s, want %s / %s", n.ID, m.ID, got.APIAddr, got.RaftAddr, m.APIAddr, m.RaftAddr)
			}
		}
		if voter, err := cl.IsVoter("ghost"); err != nil || voter {
			t.Fatalf("%s: ghost is a voter: %v, %v", n.ID, voter, err)
		}
	}
}

// The public API's Join changes no membership: a plain client (the default
// --authz off) can neither add a node nor re-address a member. Nodes join
// node to node, over the Raft port.
func TestJoinRPCCannotChangeMembership(t *testing.T) {
	c := nodetest.NewCluster(t, 2)
	cs := newCCs(t, c.Addrs()...)
	ghost, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := c.Nodes()[0], c.Nodes()[1]
	for _, req := range []*pb.JoinRequest{
		{NodeId: "ghost", ApiAddr: ghost, RaftAddr: ghost},
		{NodeId: "n2", ApiAddr: n1.APIAddr, RaftAddr: n1.RaftAddr, Rejoin: true},
		{NodeId: "n2", ApiAddr: n1.APIAddr, RaftAddr: n1.RaftAddr},
	} {
		for _, n := range []*nodetest.Node{n1, n2} {
			_, err := pb.NewClusterClient(cs.get(n.APIAddr)).Join(ctx(t), req)
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("Join %v on %s: %v, want FAILED_PRECONDITION", req, n.ID, err)
			}
		}
	}
	checkMembership(t, c)
}

// The metadata leader adds a voter, or changes a member's addresses, only
// once the node answers at the Raft address it gives, with its id and this
// cluster's id.
func TestJoinNeedsTheNodeToAnswer(t *testing.T) {
	c := nodetest.NewCluster(t, 2)
	lead, rest := metaLeader(t, c)
	other := rest[0]
	nowhere, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	cl := lead.Server().Broker().Cluster()
	for _, tc := range []struct {
		name   string
		n      broker.Node
		rejoin bool
		kind   error
	}{
		{"nobody answers", broker.Node{ID: "ghost", APIAddr: nowhere, RaftAddr: nowhere}, false, kind.ErrUnavailable},
		{"another node answers", broker.Node{ID: "ghost", APIAddr: other.APIAddr, RaftAddr: other.RaftAddr}, false, kind.ErrFailedPrecondition},
		{"a member re-addressed to nobody", broker.Node{ID: other.ID, APIAddr: nowhere, RaftAddr: nowhere}, true, kind.ErrUnavailable},
		{"a member re-addressed to another", broker.Node{ID: other.ID, APIAddr: lead.APIAddr, RaftAddr: lead.RaftAddr}, true, kind.ErrFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := cl.Join(ctx(t), tc.n, tc.rejoin); !errors.Is(err, tc.kind) {
				t.Fatalf("join: %v, want %v", err, tc.kind)
			}
			checkMembership(t, c)
		})
	}
}

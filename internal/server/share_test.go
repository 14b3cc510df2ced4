package server_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The Share service refuses a principal without READ on the group, then
// (with it) without READ on the topic, with PERMISSION_DENIED naming both.
func TestShareRefusedPrincipal(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	certFile, keyFile := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File}
		secured(c)
	})
	dir := t.TempDir()
	adminCert, adminKey := ca.Pair(t, dir, "admin")
	admin := nodetest.TLSClient(t, s.Addr(), ca.File, adminCert, adminKey)
	ctx := ctx(t)
	if _, err := admin.Admin().CreateTopic(ctx, "jobs", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	aliceCert, aliceKey := ca.Pair(t, dir, "alice")
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: aliceCert, KeyFile: aliceKey})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	alice := pb.NewShareClient(cc)
	fetch := &pb.ShareFetchRequest{Group: "workers", MemberId: "m1", Partitions: []*pb.SharePartitionRef{{Topic: "jobs"}}}
	_, err = alice.Fetch(ctx, fetch)
	wantDenied(t, "fetch", err, "User:alice", "read", "workers")
	_, err = alice.Acknowledge(ctx, &pb.ShareAcknowledgeRequest{Group: "workers", MemberId: "m1", SessionEpoch: 1,
		Acks: []*pb.ShareAck{{Topic: "jobs", Type: pb.ShareAckType_SHARE_ACK_REJECT, Reason: "bad"}}})
	wantDenied(t, "acknowledge", err, "User:alice", "read", "workers")
	_, err = alice.Describe(ctx, &pb.ShareDescribeRequest{Group: "workers"})
	wantDenied(t, "describe", err, "User:alice", "describe", "workers")
	if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow", Operation: "read",
		ResourceType: "group", Pattern: "literal", Name: "workers"}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Fetch(ctx, fetch)
	wantDenied(t, "fetch without the topic", err, "User:alice", "read", "jobs")
}

// Malformed share requests are INVALID_ARGUMENT with what to send.
func TestShareBadInput(t *testing.T) {
	s := nodetest.Start(t)
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := pb.NewShareClient(cc)
	ctx := ctx(t)
	for name, req := range map[string]*pb.ShareFetchRequest{
		"no group":      {MemberId: "m"},
		"no member":     {Group: "g"},
		"bad epoch":     {Group: "g", MemberId: "m", SessionEpoch: -2},
		"bad partition": {Group: "g", MemberId: "m", Partitions: []*pb.SharePartitionRef{{Topic: "t", Partition: -1}}},
		"bad ack":       {Group: "g", MemberId: "m", Acks: []*pb.ShareAck{{Topic: "t", Offset: 1, Type: 9}}},
		"accept reason": {Group: "g", MemberId: "m", Acks: []*pb.ShareAck{{Topic: "t", Offset: 1, Type: pb.ShareAckType_SHARE_ACK_ACCEPT, Reason: "x"}}},
		"negative max":  {Group: "g", MemberId: "m", MaxRecords: -1},
	} {
		if _, err := c.Fetch(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
}

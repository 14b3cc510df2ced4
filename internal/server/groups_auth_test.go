package server_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The Groups service refuses a principal without read on the group
// (join, heartbeat, leave) or describe (describe) with PERMISSION_DENIED,
// and its listing leaves out the groups it may not describe.
func TestGroupsRefusedPrincipal(t *testing.T) {
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
	if _, err := admin.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().CommitOffsets(ctx, "g", []client.CommittedOffset{{Topic: "t", Offset: 0}}); err != nil {
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
	alice := pb.NewGroupsClient(cc)
	_, err = alice.JoinGroup(ctx, &pb.JoinGroupRequest{Group: "g", Topics: []string{"t"}})
	wantDenied(t, "join", err, "User:alice", "read", "g")
	_, err = alice.Heartbeat(ctx, &pb.HeartbeatRequest{Group: "g", MemberId: "m", Generation: 1})
	wantDenied(t, "heartbeat", err, "User:alice", "read", "g")
	_, err = alice.LeaveGroup(ctx, &pb.LeaveGroupRequest{Group: "g", MemberId: "m"})
	wantDenied(t, "leave", err, "User:alice", "read", "g")
	_, err = alice.DescribeGroup(ctx, &pb.DescribeGroupRequest{Group: "g"})
	wantDenied(t, "describe", err, "User:alice", "describe", "g")
	list, err := alice.ListMemberGroups(ctx, &pb.ListGroupsRequest{})
	if err != nil || len(list.Groups) != 0 {
		t.Fatalf("alice lists %v %v, want no group", list, err)
	}
	all, err := admin.Admin().ListMemberGroups(ctx)
	if err != nil || len(all) != 1 || all[0].Group != "g" || all[0].State != "Empty" {
		t.Fatalf("admin lists %+v %v, want g (Empty)", all, err)
	}
}

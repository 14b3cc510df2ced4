package node

import (
	"context"
	"crypto/tls"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/logd/logd/proto/logd/v1"
)

// joinLookup is cluster.Config.JoinLookup: a node started with --join
// asks the node at that API address for its Raft address, with the public
// Status call any client may make (with tc, the node's TLS: nil,
// plaintext). Every other call one node makes of another goes over the
// peer service on the Raft port (package cluster), never this API.
func joinLookup(tc *tls.Config) func(ctx context.Context, apiAddr string) (string, error) {
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	return func(ctx context.Context, apiAddr string) (string, error) {
		cc, err := grpc.NewClient(apiAddr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return "", err
		}
		defer cc.Close()
		resp, err := pb.NewClusterClient(cc).Status(ctx, &pb.ClusterStatusRequest{Local: true})
		if err != nil {
			return "", err
		}
		for _, n := range resp.Nodes {
			if n.Id == resp.Self && n.RaftAddr != "" {
				return n.RaftAddr, nil
			}
		}
		return "", fmt.Errorf("the node at %s (--join) did not tell its Raft address", apiAddr)
	}
}

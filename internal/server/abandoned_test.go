package server_test

import (
	"context"
	"testing"

	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A metadata write whose client already gave up is not proposed: proposed
// late (after a barrier, or a forward held up by the network) it would be
// applied after the client's next write and undo it. The torture harness
// saw committed offsets go back this way: a commit that timed out at the
// client was applied after the commit the client sent next.
func TestClusterAbandonedCommitIsNotApplied(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, n := range c.Nodes() {
		_, err := n.Server().API().CommitOffsets(gone, &pb.CommitOffsetsRequest{Group: "g",
			Offsets: []*pb.CommittedOffset{{Topic: "t", Partition: 0, Offset: 0}}})
		if err == nil {
			t.Errorf("%s: a commit whose client is gone succeeded", n.ID)
		}
	}
	resp, err := pb.NewOffsetsClient(cs.get(c.Nodes()[0].APIAddr)).FetchOffsets(ctx, &pb.FetchOffsetsRequest{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Offsets) != 0 {
		t.Fatalf("an abandoned commit was applied: %v", resp.Offsets)
	}
}

package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// TestClusterDeleteRecordsForwardedToLeader: Admin.DeleteRecords sent to
// a node that does not lead the partition is answered by the leader (the
// node forwards it), and the leader then serves reads from the new start.
func TestClusterDeleteRecordsForwardedToLeader(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	for i := range 10 {
		b := encodeBatch(7, int32(i), batch.Record{Value: fmt.Appendf(nil, "v%d", i)})
		if _, err := cs.call(ctx, c.Nodes()[0].APIAddr, func(cc *grpc.ClientConn) error {
			_, err := pb.NewLogClient(cc).Produce(ctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0), Batch: b})
			return err
		}); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	leader := leaderOf(ctx, t, cs, c)
	var follower *nodetest.Node
	for _, n := range c.Nodes() {
		if n != leader {
			follower = n
		}
	}
	// Straight to the follower: no client-side redirect. It may not know
	// the topic for a moment (UNAVAILABLE); it never answers as leader.
	var resp *pb.DeleteRecordsResponse
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err = pb.NewAdminClient(cs.get(follower.APIAddr)).DeleteRecords(ctx, &pb.DeleteRecordsRequest{Topic: "t", Partition: 0, BeforeOffset: 4})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || resp.LogStartOffset != 4 {
		t.Fatalf("delete records through follower %s: %v, %v; want log start 4", follower.ID, resp, err)
	}
	_, err = pb.NewLogClient(cs.get(leader.APIAddr)).Fetch(ctx, &pb.FetchRequest{Topic: "t", Partition: 0, Offset: 3, Decode: true})
	wantCode(t, err, codes.OutOfRange)
	f, err := pb.NewLogClient(cs.get(leader.APIAddr)).Fetch(ctx, &pb.FetchRequest{Topic: "t", Partition: 0, Offset: 4, Decode: true})
	if err != nil || len(f.Records) != 6 || string(f.Records[0].Value) != "v4" {
		t.Fatalf("fetch at 4 from the leader: %v, %v; want v4 to v9", f.GetRecords(), err)
	}
}

package server_test

// A cluster under a steady producer while nodes stop, restart, join and
// leave: no acknowledged record is lost or doubled.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/server/servertest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// produceLoad appends keyed batches to partition 0 from one idempotent
// producer until stop, through any node, and returns each acknowledged
// batch's value in acknowledgement order.
func produceLoad(ctx context.Context, t *testing.T, cs *ccs, addrs []string, pid int64, stop <-chan struct{}) []string {
	var acked []string
	addr := addrs[0]
	for seq := int32(0); ; seq++ {
		select {
		case <-stop:
			return acked
		default:
		}
		v := fmt.Sprintf("p%d-%05d", pid, seq)
		b := encodeBatch(pid, seq, batch.Record{Key: []byte("k"), Value: []byte(v)})
		for try := 0; ; try++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			addr, err = cs.call(cctx, addr, func(cc *grpc.ClientConn) error {
				_, err := pb.NewLogClient(cc).Produce(cctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0), Batch: slices.Clone(b)})
				return err
			})
			cancel()
			if err == nil {
				acked = append(acked, v)
				break
			}
			if ctx.Err() != nil {
				t.Errorf("produce %s: %v", v, err)
				return acked
			}
			addr = addrs[(try+1)%len(addrs)]
		}
	}
}

func TestClusterLeaderKilledUnderLoad(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	stop := make(chan struct{})
	var acked []string
	done := make(chan struct{})
	go func() { defer close(done); acked = produceLoad(ctx, t, cs, c.Addrs(), 7, stop) }()
	time.Sleep(500 * time.Millisecond)
	old := leaderOf(ctx, t, cs, c)
	old.Stop()
	time.Sleep(3 * time.Second)
	old.Restart()
	time.Sleep(time.Second)
	close(stop)
	<-done
	if len(acked) < 10 {
		t.Fatalf("only %d records acknowledged", len(acked))
	}
	got := readAll(ctx, t, cs, c.Nodes()[0].APIAddr)
	checkExactly(t, acked, got)
	t.Logf("%d acknowledged, %d in the log, leader %s killed and restarted", len(acked), len(got), old.ID)
}

func TestClusterFollowerCatchesUpNodesJoinAndLeaveUnderLoad(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	lead := leaderOf(ctx, t, cs, c)
	// A follower misses many writes, then catches up.
	var follower *servertest.Node
	for _, n := range c.Nodes() {
		if n != lead {
			follower = n
			break
		}
	}
	follower.Stop()
	stop := make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(stop) })
	acked := produceLoad(ctx, t, cs, c.Addrs(), 7, stop)
	follower.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for follower.Server().LocalHighWatermark("t", 0) < int64(len(acked)) {
		if time.Now().After(deadline) {
			t.Fatalf("follower at %d of %d", follower.Server().LocalHighWatermark("t", 0), len(acked))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// While a producer runs: a fourth node joins, then the caught-up
	// follower's node leaves; its replica moves to the new node, which
	// catches up, and no acknowledged record is lost or doubled.
	stop = make(chan struct{})
	var more []string
	done := make(chan struct{})
	go func() { defer close(done); more = produceLoad(ctx, t, cs, c.Addrs(), 8, stop) }()
	spare := c.AddNode()
	c.WaitMembers(4, 30*time.Second)
	if _, err := cs.call(ctx, lead.APIAddr, func(cc *grpc.ClientConn) error {
		resp, err := pb.NewClusterClient(cc).RemoveNode(ctx, &pb.RemoveNodeRequest{NodeId: follower.ID})
		if err == nil && len(resp.Moved) != 1 {
			t.Errorf("moved %v", resp.Moved)
		}
		return err
	}); err != nil {
		t.Fatalf("remove node: %v", err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for spare.Server().LocalHighWatermark("t", 0) < int64(len(acked)) {
		if time.Now().After(deadline) {
			t.Fatalf("the new replica is at %d of %d", spare.Server().LocalHighWatermark("t", 0), len(acked))
		}
		time.Sleep(100 * time.Millisecond)
	}
	follower.Stop()
	time.Sleep(time.Second)
	close(stop)
	<-done
	if len(more) == 0 {
		t.Fatal("nothing acknowledged while nodes joined and left")
	}
	got := readAll(ctx, t, cs, lead.APIAddr)
	checkExactly(t, append(slices.Clone(acked), more...), got)
	// spare answers from its copy of the metadata, which applies the
	// removal when its replica of the metadata group gets there.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := pb.NewClusterClient(cs.get(spare.APIAddr)).Status(ctx, &pb.ClusterStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Nodes) == 3 && !slices.Contains(resp.Partitions[0].Replicas, follower.ID) && slices.Contains(resp.Partitions[0].Replicas, spare.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after removing %s: nodes %v, partition %v", follower.ID, resp.Nodes, resp.Partitions[0])
		}
	}
	t.Logf("%d + %d acknowledged; %d in the log", len(acked), len(more), len(got))
}

package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A restarted node's metadata is empty (its last snapshot's) until its Raft
// log replays, and that needs a leader: hashicorp/raft applies nothing past
// the snapshot until a leader tells it what is committed. The node's own
// registry has the topic from disk all along. Such a node is behind, not
// authoritative: it must not answer NOT_FOUND, which clients take as final
// (a torture run saw a topic "vanish" for ~1s after every restart, and
// 1,704 produces fail with NOT_FOUND). It answers UNAVAILABLE: retry.
func TestClusterRestartedNodeBehindOnMetadataSaysRetryNotNotFound(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	// Three restarts and two elections: more than the 30 s ctx(t) gives on
	// a loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nodes := c.Nodes()

	createT(ctx, t, cs, nodes[0].APIAddr)
	produce := func(cc *grpc.ClientConn, seq int32) error {
		b := encodeBatch(7, seq, batch.Record{Key: []byte("k"), Value: []byte("v")})
		_, err := pb.NewLogClient(cc).Produce(ctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0), Batch: b})
		return err
	}
	if _, err := cs.call(ctx, nodes[0].APIAddr, func(cc *grpc.ClientConn) error { return produce(cc, 0) }); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Every node has the topic locally (its directory and registry entry).
	for _, n := range nodes {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, err := pb.NewAdminClient(cs.get(n.APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "t"})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: describe: %v", n.ID, err)
			}
		}
	}

	// All down, then one node back alone: no leader to learn the
	// metadata from, so its state stays empty while it serves.
	for _, n := range nodes {
		n.Stop()
	}
	alone := nodes[2]
	alone.Restart()
	cc := cs.get(alone.APIAddr)
	calls := map[string]func() error{
		"produce": func() error { return produce(cc, 1) },
		"fetch": func() error {
			_, err := pb.NewLogClient(cc).Fetch(ctx, &pb.FetchRequest{Topic: "t", Partition: 0, Offset: 0})
			return err
		},
		"list offsets": func() error {
			_, err := pb.NewLogClient(cc).ListOffsets(ctx, &pb.ListOffsetsRequest{Topic: "t", Spec: pb.OffsetSpec_OFFSET_SPEC_LATEST})
			return err
		},
	}
	for what, call := range calls {
		// The answer may be a connection error while the server starts.
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			err = call()
			if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !isConnError(st.Message()) || time.Now().After(deadline) {
				break
			}
		}
		t.Logf("%s on %s: %v", what, alone.ID, err)
		if code := status.Code(err); code != codes.Unavailable {
			t.Errorf("%s on %s, restarted alone with its metadata behind: %v, want UNAVAILABLE (retry)", what, alone.ID, err)
		}
	}

	// Once the others are back the topic serves again through that node.
	nodes[0].Restart()
	nodes[1].Restart()
	cctx, cancelAfter := context.WithTimeout(ctx, 30*time.Second)
	defer cancelAfter()
	if _, err := cs.call(cctx, alone.APIAddr, func(cc *grpc.ClientConn) error { return produce(cc, 1) }); err != nil {
		t.Fatalf("produce after the others restarted: %v", err)
	}
}

// isConnError reports whether an UNAVAILABLE message is the client's own
// (no connection yet), not the server's answer.
func isConnError(msg string) bool {
	return strings.Contains(msg, "connection error") || strings.Contains(msg, "connection refused")
}

// A topic just created through one node is not on every node yet: a client
// that asks another node about it (as the Go client does before its first
// produce), or commits or reads offsets of it there, must be told to retry or sent to the metadata leader, not
// NOT_FOUND (the torture harness's producers, started right after the
// create, failed so).
func TestClusterNodeNotYetToldOfANewTopicDoesNotSayNotFound(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	nodes := c.Nodes()
	behind := nodes[2]
	cs := newCCs(t, nodes[0].APIAddr, nodes[1].APIAddr)
	ctx := ctx(t)

	c.Net.Isolate(behind.ID, nodes[0].ID, nodes[1].ID)
	if _, err := cs.call(ctx, nodes[0].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).CreateTopic(ctx, &pb.CreateTopicRequest{Name: "fresh", Partitions: 1})
		return err
	}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	cc := cs.get(behind.APIAddr)
	calls := map[string]func() error{
		"describe": func() error {
			_, err := pb.NewAdminClient(cc).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "fresh"})
			return err
		},
		"commit offsets": func() error {
			_, err := pb.NewOffsetsClient(cc).CommitOffsets(ctx, &pb.CommitOffsetsRequest{Group: "g",
				Offsets: []*pb.CommittedOffset{{Topic: "fresh", Partition: 0, Offset: 0}}})
			return err
		},
		"fetch offsets": func() error {
			_, err := pb.NewOffsetsClient(cc).FetchOffsets(ctx, &pb.FetchOffsetsRequest{Group: "g", Topic: "fresh"})
			return err
		},
		"reset offsets": func() error {
			_, err := pb.NewOffsetsClient(cc).ResetOffsets(ctx, &pb.ResetOffsetsRequest{Group: "g", Topic: "fresh", Spec: pb.OffsetSpec_OFFSET_SPEC_EARLIEST})
			return err
		},
	}
	for what, call := range calls {
		err := call()
		t.Logf("%s on %s: %v", what, behind.ID, err)
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s on %s, which has not heard of the topic yet: %v, want UNAVAILABLE (retry, or ask the metadata leader)", what, behind.ID, err)
		}
	}
	// A topic nobody created is still NOT_FOUND, from the metadata leader.
	if _, err := cs.call(ctx, behind.APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "never"})
		return err
	}); status.Code(err) != codes.NotFound {
		t.Errorf("describe of a topic never created: %v, want NOT_FOUND", err)
	}

	c.Net.Heal()
	if _, err := cs.call(ctx, behind.APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "fresh"})
		return err
	}); err != nil {
		t.Fatalf("describe on %s once healed: %v", behind.ID, err)
	}
}

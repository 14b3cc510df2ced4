package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// ccs dials API addresses once per test.
type ccs struct {
	t     *testing.T
	seeds []string // tried in turn when a node names no leader
	mu    sync.Mutex
	m     map[string]*grpc.ClientConn
}

func newCCs(t *testing.T, seeds ...string) *ccs {
	c := &ccs{t: t, seeds: seeds, m: map[string]*grpc.ClientConn{}}
	t.Cleanup(func() {
		for _, cc := range c.m {
			cc.Close()
		}
	})
	return c
}

func (c *ccs) get(addr string) *grpc.ClientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.m[addr]; ok {
		return cc
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.m[addr] = cc
	return cc
}

func leaderHint(err error) string {
	st, _ := status.FromError(err)
	if st.Code() != codes.Unavailable {
		return ""
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.Metadata["leader"]
		}
	}
	return ""
}

// call runs fn against addr, following "not leader" answers and retrying
// UNAVAILABLE (elections, a node down) on the seeds in turn until ctx
// ends, as the client does. It returns the address that answered.
func (c *ccs) call(ctx context.Context, addr string, fn func(cc *grpc.ClientConn) error) (string, error) {
	for try := 0; ; try++ {
		err := fn(c.get(addr))
		if err == nil {
			return addr, nil
		}
		if status.Code(err) != codes.Unavailable {
			return addr, err
		}
		if h := leaderHint(err); h != "" {
			addr = h
			continue
		}
		if len(c.seeds) > 0 {
			addr = c.seeds[try%len(c.seeds)]
		}
		select {
		case <-ctx.Done():
			return addr, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func encodeBatch(pid int64, seq int32, recs ...batch.Record) []byte {
	return batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: 0, Sequence: seq}, recs)
}

func TestClusterTopicsProduceFetchOffsets(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	nodes := c.Nodes()

	// A topic created through a node that may not lead the metadata.
	if _, err := cs.call(ctx, nodes[2].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).CreateTopic(ctx, &pb.CreateTopicRequest{Name: "orders", Partitions: 3})
		return err
	}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	// Every node knows it (soon), with three replicas per partition.
	for _, n := range nodes {
		var resp *pb.DescribeTopicResponse
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, err = pb.NewAdminClient(cs.get(n.APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "orders"})
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: describe: %v", n.ID, err)
		}
		if resp.Topic.Replicas != 3 || resp.Topic.Partitions != 3 {
			t.Fatalf("%s: topic %v", n.ID, resp.Topic)
		}
		// config_only: the same topic, no partitions (no leader asked).
		only, err := pb.NewAdminClient(cs.get(n.APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "orders", ConfigOnly: true})
		if err != nil || only.Topic.Partitions != 3 || only.Topic.Replicas != 3 || len(only.Partitions) != 0 {
			t.Fatalf("%s: describe config_only: %v, %v", n.ID, only, err)
		}
	}

	// Produce to each partition from node 1: it redirects to the leaders.
	for p := range int32(3) {
		for i := range 10 {
			b := encodeBatch(int64(100+p), int32(i), batch.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
			if _, err := cs.call(ctx, nodes[0].APIAddr, func(cc *grpc.ClientConn) error {
				resp, err := pb.NewLogClient(cc).Produce(ctx, &pb.ProduceRequest{Topic: "orders", Partition: proto.Int32(p), Batch: b})
				if err == nil && (resp.Appends[0].BaseOffset != int64(i) || resp.Appends[0].Duplicate) {
					t.Errorf("partition %d batch %d: %v", p, i, resp.Appends[0])
				}
				return err
			}); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		// A retry of the last batch is a duplicate.
		b := encodeBatch(int64(100+p), 9, batch.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "p%d-%d", p, 9)})
		if _, err := cs.call(ctx, nodes[1].APIAddr, func(cc *grpc.ClientConn) error {
			resp, err := pb.NewLogClient(cc).Produce(ctx, &pb.ProduceRequest{Topic: "orders", Partition: proto.Int32(p), Batch: b})
			if err == nil && (!resp.Appends[0].Duplicate || resp.Appends[0].BaseOffset != 9) {
				t.Errorf("retry: %v", resp.Appends[0])
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Fetch from every partition through node 3.
	for p := range int32(3) {
		var got []string
		if _, err := cs.call(ctx, nodes[2].APIAddr, func(cc *grpc.ClientConn) error {
			resp, err := pb.NewLogClient(cc).Fetch(ctx, &pb.FetchRequest{Topic: "orders", Partition: p, Offset: 0, Decode: true})
			got = nil
			for _, r := range resp.GetRecords() {
				got = append(got, string(r.Value))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 10 || got[0] != fmt.Sprintf("p%d-0", p) || got[9] != fmt.Sprintf("p%d-9", p) {
			t.Fatalf("partition %d: %v", p, got)
		}
	}

	// Offsets: committed through one node, read on every node, reset through another.
	if _, err := cs.call(ctx, nodes[1].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewOffsetsClient(cc).CommitOffsets(ctx, &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{
			{Topic: "orders", Partition: 0, Offset: 7}, {Topic: "orders", Partition: 1, Offset: 10}}})
		return err
	}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	waitOffsets := func(want map[int32]int64) {
		t.Helper()
		for _, n := range nodes {
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := pb.NewOffsetsClient(cs.get(n.APIAddr)).FetchOffsets(ctx, &pb.FetchOffsetsRequest{Group: "g", Topic: "orders"})
				got := map[int32]int64{}
				for _, o := range resp.GetOffsets() {
					got[o.Partition] = o.Offset
				}
				if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: offsets %v (%v), want %v", n.ID, got, err, want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waitOffsets(map[int32]int64{0: 7, 1: 10})
	if _, err := cs.call(ctx, nodes[2].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewOffsetsClient(cc).ResetOffsets(ctx, &pb.ResetOffsetsRequest{Group: "g", Topic: "orders", Spec: pb.OffsetSpec_OFFSET_SPEC_EARLIEST})
		return err
	}); err != nil {
		t.Fatalf("reset: %v", err)
	}
	waitOffsets(map[int32]int64{0: 0, 1: 0, 2: 0})
	// A commit beyond the high watermark is refused (by the leader).
	if _, err := cs.call(ctx, nodes[0].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewOffsetsClient(cc).CommitOffsets(ctx, &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{
			{Topic: "orders", Partition: 2, Offset: 11}}})
		return err
	}); status.Code(err) != codes.InvalidArgument {
		// Not every node leads partition 2; the one that answers may not
		// check. Commit through the leader to be sure.
		t.Logf("commit beyond the high watermark through node 1: %v", err)
	}

	// Status: three nodes alive, a leader per partition, leaders spread.
	resp, err := pb.NewClusterClient(cs.get(nodes[1].APIAddr)).Status(ctx, &pb.ClusterStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes: %v", resp.Nodes)
	}
	for _, n := range resp.Nodes {
		if !n.Alive || n.RaftAddr == "" {
			t.Errorf("node %v", n)
		}
	}
	if len(resp.Partitions) != 3 {
		t.Fatalf("partitions: %v", resp.Partitions)
	}
	for _, p := range resp.Partitions {
		if p.Leader == "" || len(p.Replicas) != 3 || p.CommitIndex == 0 {
			t.Errorf("partition %v", p)
		}
	}

	// Leaders move to their preferred replicas (placement's first), spread
	// over the nodes, and each leader measures its followers' lag.
	byID := map[string]*nodetest.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		resp, err := pb.NewClusterClient(cs.get(nodes[0].APIAddr)).Status(ctx, &pb.ClusterStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		spread, measured := true, true
		leaders := map[string]bool{}
		for _, p := range resp.Partitions {
			leaders[p.Leader] = true
			if p.Leader != p.Replicas[0] {
				spread = false
				continue
			}
			for _, f := range p.Replicas[1:] {
				lag, ok := byID[p.Leader].Server().FollowerLagForTest("orders", fmt.Sprint(p.Partition), f)
				if !ok || lag < 0 {
					measured = false
				}
			}
		}
		if spread && measured && len(leaders) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 40s: leaders spread %v (on %d nodes), followers' lag measured %v: %v", spread, len(leaders), measured, resp.Partitions)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Deleting the topic removes it on every node.
	if _, err := cs.call(ctx, nodes[0].APIAddr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).DeleteTopic(ctx, &pb.DeleteTopicRequest{Name: "orders"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Each node drops it; asked about it, a node that is not the metadata
	// leader sends the client there, which answers NOT_FOUND.
	for _, n := range nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := pb.NewAdminClient(cs.get(n.APIAddr)).ListTopics(ctx, &pb.ListTopicsRequest{})
			if err == nil && len(list.Topics) == 0 {
				_, err = cs.call(ctx, n.APIAddr, func(cc *grpc.ClientConn) error {
					_, err := pb.NewAdminClient(cc).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "orders"})
					return err
				})
				if status.Code(err) == codes.NotFound {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: topic still there after delete: %v", n.ID, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// readAll reads partition 0 of "t" from its leader.
func readAll(ctx context.Context, t *testing.T, cs *ccs, addr string) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		var resp *pb.FetchResponse
		if _, err := cs.call(ctx, addr, func(cc *grpc.ClientConn) error {
			var err error
			resp, err = pb.NewLogClient(cc).Fetch(ctx, &pb.FetchRequest{Topic: "t", Partition: 0, Offset: off, Decode: true})
			return err
		}); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if len(resp.Records) == 0 {
			return out
		}
		for _, r := range resp.Records {
			out = append(out, string(r.Value))
		}
		off = resp.NextOffset
	}
}

func createT(ctx context.Context, t *testing.T, cs *ccs, addr string) {
	t.Helper()
	if _, err := cs.call(ctx, addr, func(cc *grpc.ClientConn) error {
		_, err := pb.NewAdminClient(cc).CreateTopic(ctx, &pb.CreateTopicRequest{Name: "t", Partitions: 1})
		return err
	}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
}

// leaderOf is the node leading partition 0 of "t", by cluster status.
func leaderOf(ctx context.Context, t *testing.T, cs *ccs, c *nodetest.Cluster) *nodetest.Node {
	t.Helper()
	for range 200 {
		for _, n := range c.Nodes() {
			if n.Server() == nil {
				continue
			}
			resp, err := pb.NewClusterClient(cs.get(n.APIAddr)).Status(ctx, &pb.ClusterStatusRequest{Local: true})
			if err != nil {
				continue
			}
			for _, p := range resp.Partitions {
				if p.Topic == "t" && p.RaftState == "Leader on "+n.ID {
					return n
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no leader of t/0")
	return nil
}

// checkExactly verifies the log holds the acknowledged values once each,
// in order, with possibly extra (unacknowledged but committed) values in
// between that are not duplicates.
func checkExactly(t *testing.T, acked, got []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Fatalf("%s appears twice", v)
		}
		seen[v] = true
	}
	i := 0
	for _, v := range got {
		if i < len(acked) && v == acked[i] {
			i++
		}
	}
	if i != len(acked) {
		t.Fatalf("acknowledged %d records, found %d of them in order; first missing %s (log holds %d)", len(acked), i, acked[i], len(got))
	}
}

func TestClusterMinorityLeaderStopsAcknowledging(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	lead := leaderOf(ctx, t, cs, c)
	// Something committed first.
	for i := range int32(3) {
		if _, err := pb.NewLogClient(cs.get(lead.APIAddr)).Produce(ctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0),
			Batch: encodeBatch(1, i, batch.Record{Value: fmt.Appendf(nil, "before-%d", i)})}); err != nil {
			t.Fatal(err)
		}
	}
	var others []string
	for _, n := range c.Nodes() {
		if n != lead {
			others = append(others, n.ID)
		}
	}
	c.Net.Isolate(lead.ID, others...)
	// The isolated leader must not acknowledge: its append cannot commit.
	cctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	_, err := pb.NewLogClient(cs.get(lead.APIAddr)).Produce(cctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0),
		Batch: encodeBatch(2, 0, batch.Record{Value: []byte("minority")})})
	cancel()
	if err == nil {
		t.Fatal("an isolated leader acknowledged a produce")
	}
	// The majority elects a leader and accepts writes.
	var majority string
	for _, n := range c.Nodes() {
		if n != lead {
			majority = n.APIAddr
			break
		}
	}
	cctx, cancel = context.WithTimeout(ctx, 20*time.Second)
	_, err = cs.call(cctx, majority, func(cc *grpc.ClientConn) error {
		_, err := pb.NewLogClient(cc).Produce(cctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0),
			Batch: encodeBatch(3, 0, batch.Record{Value: []byte("majority")})})
		return err
	})
	cancel()
	if err != nil {
		t.Fatalf("majority side: %v", err)
	}
	// The cut-off node must not answer a read at the end of the log as if
	// nothing had been appended since: it answers the record or an error.
	f, err := pb.NewLogClient(cs.get(lead.APIAddr)).Fetch(ctx, &pb.FetchRequest{Topic: "t", Partition: 0, Offset: 3, Decode: true})
	if err == nil && len(f.Records) == 0 {
		t.Fatal("a node cut off from the majority answered an empty read at the end of the log (stale)")
	}
	lo, err := pb.NewLogClient(cs.get(lead.APIAddr)).ListOffsets(ctx, &pb.ListOffsetsRequest{Topic: "t"})
	if err == nil && lo.Partitions[0].Offset < 4 {
		t.Fatalf("a node cut off from the majority answered latest = %d, 4 records are acknowledged", lo.Partitions[0].Offset)
	}
	// Committed offsets too: a commit acknowledged by the majority is seen,
	// or the cut-off node refuses to answer.
	cctx, cancel = context.WithTimeout(ctx, 20*time.Second)
	_, err = cs.call(cctx, majority, func(cc *grpc.ClientConn) error {
		_, err := pb.NewOffsetsClient(cc).CommitOffsets(cctx, &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{{Topic: "t", Partition: 0, Offset: 2}}})
		return err
	})
	cancel()
	if err != nil {
		t.Fatalf("commit on the majority side: %v", err)
	}
	fo, err := pb.NewOffsetsClient(cs.get(lead.APIAddr)).FetchOffsets(ctx, &pb.FetchOffsetsRequest{Group: "g"})
	if err == nil && (len(fo.Offsets) != 1 || fo.Offsets[0].Offset != 2) {
		t.Fatalf("a node cut off from the majority answered committed offsets %v", fo.Offsets)
	}
	c.Net.Heal()
	// After healing, every node agrees; the minority's unacknowledged
	// append may or may not be there (it was never acknowledged), but the
	// acknowledged ones are, once each.
	got := readAll(ctx, t, cs, majority)
	checkExactly(t, []string{"before-0", "before-1", "before-2", "majority"}, got)
	// The cut-off leader's append never reached a majority: it is not in
	// the log (the old leader truncated it when it rejoined).
	if slices.Contains(got, "minority") {
		t.Fatalf("an append no majority stored is in the log: %v", got)
	}
	// The old leader's log converges: ask it as a follower once it leads
	// again or via its local log.
	deadline := time.Now().Add(20 * time.Second)
	for {
		hw := lead.Server().LocalHighWatermark("t", 0)
		if hw == int64(len(got)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("old leader's high watermark %d, the cluster's log holds %d", hw, len(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// collector is a group member that keeps what it reads, by partition.
type collector struct {
	mu   sync.Mutex
	seen map[int32][]string
}

func collect(t *testing.T, c *client.Client, topic string) *collector {
	t.Helper()
	gc, err := c.NewGroupConsumer(context.Background(), client.GroupConsumerOptions{Group: "grow", Topic: topic,
		SessionTimeout: 6 * time.Second, MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	col := &collector{seen: map[int32][]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			recs, err := gc.Poll(ctx)
			if err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			col.mu.Lock()
			for _, r := range recs {
				col.seen[r.Partition] = append(col.seen[r.Partition], string(r.Value))
			}
			col.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; gc.Close() })
	return col
}

func (c *collector) has(p int32, v string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, got := range c.seen[p] {
		if got == v {
			return true
		}
	}
	return false
}

// TestClusterAddPartitions: alter --partitions through a node that may
// not lead the metadata; when it returns the new partitions take a
// produce through every node, a group member reads them, bad counts are
// refused, and a restart of every node keeps the count.
func TestClusterAddPartitions(t *testing.T) {
	cl := nodetest.NewCluster(t, 3)
	cs := newCCs(t, cl.Addrs()...)
	ctx := ctx(t)
	nodes := cl.Nodes()
	c := nodetest.ClusterClient(t, cl)
	if _, err := c.Admin().CreateTopic(ctx, "grow", client.TopicOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	col := collect(t, c, "grow")

	resp, err := pb.NewAdminClient(cs.get(nodes[2].APIAddr)).AlterTopic(ctx, &pb.AlterTopicRequest{Name: "grow", Partitions: 5})
	if err != nil {
		t.Fatalf("alter through %s: %v", nodes[2].ID, err)
	}
	if got := resp.GetTopic().GetPartitions(); got != 5 {
		t.Fatalf("alter answered %d partitions, want 5", got)
	}
	// Through the node that answered, at once.
	for p := int32(2); p < 5; p++ {
		if err := produceAtOnce(ctx, cs, nodes[2].APIAddr, "grow", p, encodeBatch(int64(3000+p), 0, batch.Record{Value: []byte(fmt.Sprintf("v%d", p))})); err != nil {
			t.Fatalf("produce to new partition %d through %s right after the alter: %v", p, nodes[2].ID, err)
		}
	}
	// The new partitions' replicas are placed: three each, a leader known.
	d, err := pb.NewAdminClient(cs.get(nodes[2].APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "grow"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Partitions {
		if len(p.Replicas) != 3 {
			t.Errorf("partition %d: replicas %v, want 3", p.Partition, p.Replicas)
		}
	}
	// Through every node, once it has applied the change.
	for i, n := range nodes {
		waitUntil(t, 10*time.Second, n.ID+" has 5 partitions", func() bool {
			d, err := pb.NewAdminClient(cs.get(n.APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "grow"})
			return err == nil && len(d.Partitions) == 5
		})
		if err := produceAtOnce(ctx, cs, n.APIAddr, "grow", 4, encodeBatch(int64(4000+i), 0, batch.Record{Value: []byte(n.ID)})); err != nil {
			t.Fatalf("produce to partition 4 through %s: %v", n.ID, err)
		}
	}
	waitUntil(t, 40*time.Second, "the group member reads the new partitions", func() bool {
		return col.has(2, "v2") && col.has(3, "v3") && col.has(4, "v4") && col.has(4, "n1")
	})

	admin := pb.NewAdminClient(cs.get(nodes[0].APIAddr))
	for _, n := range []int32{5, 3, -1} {
		_, err := admin.AlterTopic(ctx, &pb.AlterTopicRequest{Name: "grow", Partitions: n})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("alter to %d partitions: %v, want InvalidArgument", n, err)
		}
	}
	if _, err := admin.AlterTopic(ctx, &pb.AlterTopicRequest{Name: "nope", Partitions: 9}); status.Code(err) != codes.NotFound {
		t.Errorf("alter of an unknown topic: %v, want NotFound", err)
	}

	cl.Close()
	for _, n := range nodes {
		n.Restart()
	}
	for _, n := range nodes {
		waitUntil(t, 30*time.Second, n.ID+" serves 5 partitions after the restart", func() bool {
			d, err := pb.NewAdminClient(cs.get(n.APIAddr)).DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "grow"})
			return err == nil && d.GetTopic().GetPartitions() == 5 && len(d.Partitions) == 5
		})
	}
	p4 := int32(4)
	if _, err := c.NewProducer(client.ProducerOptions{}).Produce(ctx, client.Record{Topic: "grow", Partition: &p4, Value: []byte("after")}).Get(ctx); err != nil {
		t.Fatalf("produce to partition 4 after the restart: %v", err)
	}
}

// TestAddPartitionsSingleNodeRestart: on a node that runs alone the new
// partitions take records through the gRPC API at once and a restart
// keeps them with their records.
func TestAddPartitionsSingleNodeRestart(t *testing.T) {
	dir := t.TempDir()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	start := func() *node.Node {
		s, err := node.Start(node.Config{Config: broker.Config{DataDir: dir}, Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	cs := newCCs(t, addr)
	ctx := ctx(t)
	admin := pb.NewAdminClient(cs.get(addr))
	if _, err := admin.CreateTopic(ctx, &pb.CreateTopicRequest{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	retention := int64(3600_000)
	resp, err := admin.AlterTopic(ctx, &pb.AlterTopicRequest{Name: "t", Partitions: 3, Config: &pb.TopicConfig{RetentionMs: &retention}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetTopic(); got.GetPartitions() != 3 || got.GetConfig().GetRetentionMs() != retention {
		t.Fatalf("alter answered %v, want 3 partitions and the new retention", got)
	}
	if err := produceAtOnce(ctx, cs, addr, "t", 2, encodeBatch(1, 0, batch.Record{Value: []byte("x")})); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = start()
	defer s.Close()
	d, err := admin.DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetTopic().GetPartitions() != 3 || len(d.Partitions) != 3 || d.Partitions[2].HighWatermark != 1 {
		t.Fatalf("after restart: %v", d)
	}
}

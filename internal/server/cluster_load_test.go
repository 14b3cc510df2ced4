package server_test

// A cluster under a steady producer while nodes stop, restart, join and
// leave: no acknowledged record is lost or doubled.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// load is one idempotent producer appending keyed batches to partition 0
// of "t" through any node, in a goroutine, until finish: a test waits for
// its progress (records acknowledged) instead of sleeping. A batch not
// acknowledged is sent again, through the next node, until it is or the
// load is finished.
type load struct {
	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc
	once   sync.Once

	mu      sync.Mutex
	acked   []string // each acknowledged batch's value, in acknowledgement order
	lastErr error    // the last refusal, for a test that waits in vain
}

// startLoad starts a producer with id pid; it is finished when the test
// ends at the latest.
func startLoad(t *testing.T, cs *ccs, addrs []string, pid int64) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go func() { defer close(l.done); l.run(ctx, cs, addrs, pid) }()
	t.Cleanup(func() { l.finish() })
	return l
}

func (l *load) run(ctx context.Context, cs *ccs, addrs []string, pid int64) {
	addr := addrs[0]
	for seq := int32(0); ; seq++ {
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
			l.mu.Lock()
			if err == nil {
				l.acked = append(l.acked, v)
			} else {
				l.lastErr = fmt.Errorf("produce %s through %s: %w", v, addr, err)
			}
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			default:
			}
			if err == nil {
				break
			}
			addr = addrs[(try+1)%len(addrs)]
		}
	}
}

// count is how many records are acknowledged so far.
func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitAcked waits until n records are acknowledged in all.
func (l *load) waitAcked(t *testing.T, n int, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); l.count() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("%s: %d of %d records acknowledged after a minute; last error: %v", what, len(l.acked), n, l.lastErr)
		}
	}
}

// finish stops the producer (a batch in flight is left unacknowledged)
// and returns the acknowledged values.
func (l *load) finish() []string {
	l.once.Do(func() { close(l.stop); l.cancel() })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// produceLoad runs a load until n records are acknowledged.
func produceLoad(t *testing.T, cs *ccs, addrs []string, pid int64, n int) []string {
	t.Helper()
	l := startLoad(t, cs, addrs, pid)
	l.waitAcked(t, n, "a producer alone")
	return l.finish()
}

// waitHighWatermark waits until n's local copy of partition 0 of "t"
// holds at least hw records.
func waitHighWatermark(t *testing.T, n *nodetest.Node, hw int, what string) {
	t.Helper()
	local := func() int64 {
		if s := n.Server(); s != nil {
			return s.LocalHighWatermark("t", 0)
		}
		return -1
	}
	waitUntil(t, time.Minute, fmt.Sprintf("%s: %s's high watermark reaches %d", what, n.ID, hw), func() bool { return local() >= int64(hw) })
}

// stepCtx bounds one step of a test (an RPC and its retries) rather than
// the whole test, whose length depends on how loaded the machine is.
func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The partition's leader stops while a producer runs, then comes back: the
// others elect a leader that acknowledges on, the old one catches up, and
// the log holds every acknowledged record once, in order.
func TestClusterLeaderKilledUnderLoad(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	createT(stepCtx(t), t, cs, c.Nodes()[0].APIAddr)
	l := startLoad(t, cs, c.Addrs(), 7)
	l.waitAcked(t, 20, "before the leader is stopped")
	old := leaderOf(stepCtx(t), t, cs, c)
	old.Stop()
	l.waitAcked(t, l.count()+20, "after the leader stopped (a new leader is elected)")
	old.Restart()
	waitHighWatermark(t, old, l.count()+20, "the restarted leader catches up as a follower")
	acked := l.finish()
	got := readAll(stepCtx(t), t, cs, c.Nodes()[0].APIAddr)
	checkExactly(t, acked, got)
	t.Logf("%d acknowledged, %d in the log, leader %s stopped and restarted", len(acked), len(got), old.ID)
}

func TestClusterFollowerCatchesUpNodesJoinAndLeaveUnderLoad(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	createT(stepCtx(t), t, cs, c.Nodes()[0].APIAddr)
	lead := leaderOf(stepCtx(t), t, cs, c)
	// A follower misses many writes, then catches up.
	var follower *nodetest.Node
	for _, n := range c.Nodes() {
		if n != lead {
			follower = n
			break
		}
	}
	follower.Stop()
	acked := produceLoad(t, cs, c.Addrs(), 7, 100)
	follower.Restart()
	waitHighWatermark(t, follower, len(acked), "a follower back from a stop")

	// While a producer runs: a fourth node joins, then the caught-up
	// follower's node leaves; its replica moves to the new node, which
	// catches up, and no acknowledged record is lost or doubled.
	l := startLoad(t, cs, c.Addrs(), 8)
	spare := c.AddNode()
	c.WaitMembers(4, time.Minute)
	ctx := stepCtx(t)
	if _, err := cs.call(ctx, lead.APIAddr, func(cc *grpc.ClientConn) error {
		resp, err := pb.NewClusterClient(cc).RemoveNode(ctx, &pb.RemoveNodeRequest{NodeId: follower.ID})
		if err == nil && len(resp.Moved) != 1 {
			t.Errorf("moved %v", resp.Moved)
		}
		return err
	}); err != nil {
		t.Fatalf("remove node: %v", err)
	}
	waitHighWatermark(t, spare, len(acked), "the new replica catches up")
	follower.Stop()
	l.waitAcked(t, l.count()+20, "after the removed node stopped")
	more := l.finish()
	got := readAll(stepCtx(t), t, cs, lead.APIAddr)
	checkExactly(t, append(slices.Clone(acked), more...), got)
	waitRemoved(t, c, cs, spare, follower.ID)
	t.Logf("%d + %d acknowledged; %d in the log", len(acked), len(more), len(got))
}

// waitRemoved waits until n's copy of the metadata, which applies a
// removal when n's replica of the metadata group gets there, lists three
// nodes and has moved partition 0's replica from removed to n. A failure
// says which metadata leader each running node knows.
func waitRemoved(t *testing.T, c *nodetest.Cluster, cs *ccs, n *nodetest.Node, removed string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		resp, err := pb.NewClusterClient(cs.get(n.APIAddr)).Status(ctx, &pb.ClusterStatusRequest{})
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		if len(resp.Nodes) == 3 && !slices.Contains(resp.Partitions[0].Replicas, removed) && slices.Contains(resp.Partitions[0].Replicas, n.ID) {
			return
		}
		last = fmt.Sprintf("nodes %v, partition %v", resp.Nodes, resp.Partitions[0])
	}
	leaders := map[string]string{}
	for _, m := range c.Nodes() {
		if s := m.Server(); s != nil {
			leaders[m.ID] = s.Broker().Cluster().MetaLeader().ID
		}
	}
	t.Fatalf("a minute after removing %s, %s still answers %s; the metadata leader as each running node knows it: %v", removed, n.ID, last, leaders)
}

package server_test

import (
	"encoding/binary"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A produce on a 3-node cluster's leader computes the batch's CRC once in
// the buffer it came in (broker.CheckBatch; the partition, Raft and the
// log take the batch.Checked it returns). The batch's first CRC
// computation is the leader's check, before anything else can see it;
// later ones are a follower's (in the bytes it received) or a read's.
func TestClusterLeaderComputesBatchCRCOnce(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	cs := newCCs(t, c.Addrs()...)
	ctx := ctx(t)
	createT(ctx, t, cs, c.Nodes()[0].APIAddr)
	leader := leaderOf(ctx, t, cs, c)
	data := encodeBatch(-1, -1, batch.Record{Key: []byte("k"), Value: []byte("checked once on " + leader.ID)})
	crc := binary.BigEndian.Uint32(data[17:21])
	var mu sync.Mutex
	var first *byte
	n := map[*byte]int{}
	batch.SetChecksumHook(func(b []byte) {
		if len(b) < batch.HeaderSize || binary.BigEndian.Uint32(b[17:21]) != crc {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = &b[0]
		}
		n[&b[0]]++
	})
	t.Cleanup(func() { batch.SetChecksumHook(nil) })
	resp, err := pb.NewLogClient(cs.get(leader.APIAddr)).Produce(ctx, &pb.ProduceRequest{Topic: "t", Partition: proto.Int32(0), Batch: data})
	if err != nil {
		t.Fatalf("produce on the leader %s: %v", leader.ID, err)
	}
	if resp.Appends[0].BaseOffset != 0 {
		t.Fatalf("produce: %v", resp.Appends[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if first == nil || n[first] != 1 {
		t.Fatalf("the leader computed the batch's CRC %d times in the buffer it came in, want 1", n[first])
	}
}

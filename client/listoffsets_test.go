package client

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// ListOffsets over many partitions keeps each partition's answer: here the
// partitions never all have a leader at once (a request naming more than
// one always fails, as with a node that bounds its awake partitions), and
// each fails its first request of its own. The answer comes all the same,
// each partition asked until it answered and then no more. Before, the
// whole request was retried until the retry timeout and failed.
func TestListOffsetsKeepsAnswersPerPartition(t *testing.T) {
	f := startFake(t)
	f.createTopic("t", 4)
	asked := map[int32]int{}
	f.listOffsetsFails = func(req *logdv1.ListOffsetsRequest) error {
		if len(req.GetPartitions()) != 1 {
			return status.Error(codes.Unavailable, "some partition has no leader right now: retry")
		}
		p := req.GetPartitions()[0]
		asked[p]++ // under f.mu
		if asked[p] == 1 {
			return status.Errorf(codes.Unavailable, "partition t-%d has no leader right now: retry", p)
		}
		return nil
	}
	c := dialT(t, f.addr, WithRetryTimeout(5*time.Second))
	start := time.Now()
	offs, err := c.Admin().ListOffsets(context.Background(), "t", nil, Latest())
	t.Logf("answered in %v", time.Since(start))
	if err != nil || len(offs) != 4 {
		t.Fatalf("list offsets: %d answers, %v", len(offs), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range offs {
		if o.Partition != int32(i) {
			t.Errorf("answer %d is of partition %d", i, o.Partition)
		}
		if asked[int32(i)] != 2 {
			t.Errorf("partition %d asked %d times on its own, want 2 (once refused, once answered)", i, asked[int32(i)])
		}
	}
	// A request that names one partition is one call (retried as any admin
	// call).
	f.mu.Unlock()
	offs, err = c.Admin().ListOffsets(context.Background(), "t", []int32{3}, Earliest())
	f.mu.Lock()
	if err != nil || len(offs) != 1 || asked[3] != 3 {
		t.Fatalf("list offsets of partition 3: %v, %v after %d requests, want one answer after 3", offs, err, asked[3])
	}
}

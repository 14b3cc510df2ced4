package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// TestReadPastTheEndIsOutOfRange: a Fetch or Subscribe at the high
// watermark waits for the next record, but one past it asks for offsets
// the log has not given out: OUT_OF_RANGE with the valid range at once,
// instead of waiting silently (issue 17 item 7).
func TestReadPastTheEndIsOutOfRange(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	for range 3 {
		if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Records: []*pb.Record{{Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 3, MaxWaitMs: 50})
	if err != nil || len(f.Batches) != 0 {
		t.Fatalf("fetch at the high watermark: %v %v, want an empty answer after the wait", err, f)
	}
	start := time.Now()
	_, err = c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 4, MaxWaitMs: 10000})
	if status.Code(err) != codes.OutOfRange || time.Since(start) > 5*time.Second {
		t.Fatalf("fetch past the high watermark: %v after %v, want OUT_OF_RANGE at once", err, time.Since(start))
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "the next record gets offset 3") || !strings.Contains(msg, "holds offsets 0 to 2") {
		t.Fatalf("fetch past the high watermark: %q does not give the range", msg)
	}
	// Below the log start: deleted, by retention or a trim; the high
	// watermark is not an offset the log holds.
	if _, err := c.admin.DeleteRecords(ctx(t), &pb.DeleteRecordsRequest{Topic: "t", BeforeOffset: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "t", Offset: 0})
	if msg := status.Convert(err).Message(); status.Code(err) != codes.OutOfRange ||
		!strings.Contains(msg, "was deleted (by retention or a trim-prefix): the partition starts at 1 (it holds offsets 1 to 2)") {
		t.Fatalf("fetch below the log start: %v, want it deleted and the offsets held", err)
	}
	sub, err := c.log.Subscribe(ctx(t), &pb.SubscribeRequest{Topic: "t", Offset: 1 << 40})
	if err == nil {
		_, err = sub.Recv()
	}
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("subscribe past the high watermark: %v, want OUT_OF_RANGE", err)
	}
}

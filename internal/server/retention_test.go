package server_test

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// TestRetentionAlteredAtRuntime: a topic with small segments keeps
// everything until its retention is altered; the next trim deletes whole
// old segments, and a fetch below the new log start is OUT_OF_RANGE with
// the bounds in its details.
func TestRetentionAlteredAtRuntime(t *testing.T) {
	s := nodetest.Start(t, func(c *node.Config) { c.RetentionInterval = 50 * time.Millisecond })
	c := dial(t, s)
	seg := int64(4096)
	if _, err := c.admin.CreateTopic(ctx(t), &pb.CreateTopicRequest{Name: "r", Partitions: 1,
		Config: &pb.TopicConfig{SegmentBytes: &seg}}); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 200)
	for range 100 {
		if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "r", Records: []*pb.Record{{Value: value}}}); err != nil {
			t.Fatal(err)
		}
	}
	describe := func() *pb.PartitionInfo {
		d, err := c.admin.DescribeTopic(ctx(t), &pb.DescribeTopicRequest{Name: "r"})
		if err != nil {
			t.Fatal(err)
		}
		return d.Partitions[0]
	}
	before := describe()
	if before.Segments < 3 || before.HighWatermark != 100 {
		t.Fatalf("want several segments and 100 records: %+v", before)
	}
	time.Sleep(200 * time.Millisecond)
	if p := describe(); p.LogStartOffset != 0 {
		t.Fatalf("default retention deleted data: %+v", p)
	}
	keep := int64(10)
	if _, err := c.admin.AlterTopic(ctx(t), &pb.AlterTopicRequest{Name: "r", Config: &pb.TopicConfig{RetentionRecords: &keep}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var after *pb.PartitionInfo
	for {
		after = describe()
		if after.LogStartOffset > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after.LogStartOffset == 0 || after.LogStartOffset > 90 || after.Segments >= before.Segments || after.HighWatermark != 100 {
		t.Fatalf("after alter: %+v (before %+v)", after, before)
	}
	_, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "r", Offset: 0})
	wantCode(t, err, codes.OutOfRange)
	var info *errdetails.ErrorInfo
	for _, d := range status.Convert(err).Details() {
		if e, ok := d.(*errdetails.ErrorInfo); ok {
			info = e
		}
	}
	if info == nil || info.Metadata["log_start_offset"] != strconv.FormatInt(after.LogStartOffset, 10) || info.Metadata["high_watermark"] != "100" {
		t.Fatalf("details: %+v", info)
	}
	// Reading from the new log start works.
	f, err := c.log.Fetch(ctx(t), &pb.FetchRequest{Topic: "r", Offset: after.LogStartOffset, Decode: true})
	if err != nil || len(f.Records) == 0 || f.Records[0].Offset != after.LogStartOffset {
		t.Fatalf("fetch at log start: %v %+v", err, f)
	}
}

package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

func TestConsumerOffsets(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	oc := pb.NewOffsetsClient(c.cc)
	createTopic(t, c, "t", 2)
	p0 := int32(0)
	before := time.Now().Add(-time.Hour).UnixMilli()
	var recs []*pb.Record
	for i := range 10 {
		ts := before
		if i >= 6 {
			ts = time.Now().UnixMilli()
		}
		recs = append(recs, &pb.Record{Value: []byte{byte(i)}, TimestampMs: ts})
	}
	if _, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &p0, Records: recs}); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.CommitOffsets(ctx(t), &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{
		{Topic: "t", Partition: 0, Offset: 4, Metadata: "m"}, {Topic: "t", Partition: 1, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	f, err := oc.FetchOffsets(ctx(t), &pb.FetchOffsetsRequest{Group: "g", Topic: "t"})
	if err != nil || len(f.Offsets) != 2 {
		t.Fatalf("fetch: %v %+v", err, f)
	}
	o := f.Offsets[0]
	if o.Offset != 4 || o.HighWatermark != 10 || o.Lag != 6 || o.Metadata != "m" || o.Trimmed || o.CommitTimeMs == 0 {
		t.Fatalf("partition 0: %+v", o)
	}
	g, err := oc.ListGroups(ctx(t), &pb.ListGroupsRequest{})
	if err != nil || len(g.Groups) != 1 || g.Groups[0] != "g" {
		t.Fatalf("groups: %v %+v", err, g)
	}
	// Reset by time: the first record at or after 30 minutes ago is offset 6.
	r, err := oc.ResetOffsets(ctx(t), &pb.ResetOffsetsRequest{Group: "g", Topic: "t", Partition: &p0,
		Spec: pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP, TimestampMs: time.Now().Add(-30 * time.Minute).UnixMilli()})
	if err != nil || len(r.Offsets) != 1 || r.Offsets[0].Offset != 6 {
		t.Fatalf("reset by time: %v %+v", err, r)
	}
	r, err = oc.ResetOffsets(ctx(t), &pb.ResetOffsetsRequest{Group: "g", Topic: "t", Spec: pb.OffsetSpec_OFFSET_SPEC_EARLIEST})
	if err != nil || len(r.Offsets) != 2 || r.Offsets[0].Offset != 0 {
		t.Fatalf("reset to earliest: %v %+v", err, r)
	}
	// Errors.
	_, err = oc.CommitOffsets(ctx(t), &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{{Topic: "t", Partition: 0, Offset: 11}}})
	wantCode(t, err, codes.InvalidArgument)
	_, err = oc.CommitOffsets(ctx(t), &pb.CommitOffsetsRequest{Group: "g", Offsets: []*pb.CommittedOffset{{Topic: "nope", Partition: 0, Offset: 0}}})
	wantCode(t, err, codes.NotFound)
	_, err = oc.CommitOffsets(ctx(t), &pb.CommitOffsetsRequest{Group: "", Offsets: []*pb.CommittedOffset{{Topic: "t", Partition: 0, Offset: 0}}})
	wantCode(t, err, codes.InvalidArgument)
	_, err = oc.FetchOffsets(ctx(t), &pb.FetchOffsetsRequest{Group: "g", Topic: "nope"})
	wantCode(t, err, codes.NotFound)
	// Deleting the topic removes its committed offsets.
	if _, err := c.admin.DeleteTopic(ctx(t), &pb.DeleteTopicRequest{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	f, err = oc.FetchOffsets(ctx(t), &pb.FetchOffsetsRequest{Group: "g"})
	if err != nil || len(f.Offsets) != 0 {
		t.Fatalf("after delete: %v %+v", err, f)
	}
}

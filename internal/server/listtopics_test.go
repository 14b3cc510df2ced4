package server_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// TestListTopicsPages: ListTopics answers in pages in name order, each
// page's token leading to the next, so no answer outgrows grpc's 4 MiB
// default (issue 17 item 7: 15,000 topics did).
func TestListTopicsPages(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	for i := range 25 {
		createTopic(t, c, fmt.Sprintf("t%02d", i), 1)
	}
	var names []string
	token := ""
	pages := 0
	for {
		resp, err := c.admin.ListTopics(ctx(t), &pb.ListTopicsRequest{PageSize: 10, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(resp.Topics) > 10 {
			t.Fatalf("page %d holds %d topics, over the page size 10", pages, len(resp.Topics))
		}
		for _, ti := range resp.Topics {
			names = append(names, ti.Name)
		}
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	if pages != 3 || len(names) != 25 || names[0] != "t00" || names[24] != "t24" {
		t.Fatalf("%d pages, topics %v", pages, names)
	}
	resp, err := c.admin.ListTopics(ctx(t), &pb.ListTopicsRequest{})
	if err != nil || len(resp.Topics) != 25 || resp.NextPageToken != "" {
		t.Fatalf("default page: %v, %d topics, token %q", err, len(resp.GetTopics()), resp.GetNextPageToken())
	}
	_, err = c.admin.ListTopics(ctx(t), &pb.ListTopicsRequest{PageSize: -1})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.admin.ListTopics(ctx(t), &pb.ListTopicsRequest{PageToken: "not/a topic"})
	wantCode(t, err, codes.InvalidArgument)
}

// TestListTopicsPageFitsTheDefaultMessageSize: the largest page, of the
// longest names with every config field at its widest, fits grpc's 4 MiB
// default with room to spare.
func TestListTopicsPageFitsTheDefaultMessageSize(t *testing.T) {
	resp := &pb.ListTopicsResponse{NextPageToken: strings.Repeat("z", 249)}
	v := int64(math.MinInt64)
	for range broker.MaxTopicPage {
		resp.Topics = append(resp.Topics, &pb.TopicInfo{Name: strings.Repeat("z", 249), Partitions: math.MinInt32, Replicas: math.MinInt32,
			Config: &pb.TopicConfig{RetentionMs: &v, RetentionBytes: &v, RetentionRecords: &v, SegmentBytes: &v, SegmentMs: &v}, CreatedMs: v})
	}
	if n := proto.Size(resp); n > 2<<20 {
		t.Fatalf("a full page is %d bytes, over half of grpc's 4 MiB default", n)
	}
}

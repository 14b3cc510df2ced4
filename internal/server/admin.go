package server

import (
	"context"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

// CreateTopic creates a topic.
func (s *Server) CreateTopic(ctx context.Context, req *pb.CreateTopicRequest) (*pb.CreateTopicResponse, error) {
	c := broker.DefaultConfig(req.Name)
	c.Partitions = req.Partitions
	c.Replicas = req.Replicas
	c = c.Apply(configChange(req.Config))
	// On a node that does not lead the metadata, the broker passes the
	// change on to the leader (over the peer service), as for every front-end.
	c, err := s.b.CreateTopic(ctx, principal(ctx), c)
	return reply(&pb.CreateTopicResponse{Topic: topicInfo(c)}, err)
}

// ListTopics lists topics in name order, one page at a time
// (broker.TopicPage): a page starts after the topic named by page_token,
// the last of the previous page.
func (s *Server) ListTopics(ctx context.Context, req *pb.ListTopicsRequest) (*pb.ListTopicsResponse, error) {
	page, next, err := s.b.TopicPage(ctx, principal(ctx), req.PageToken, int(req.PageSize))
	return reply(&pb.ListTopicsResponse{Topics: each(page, topicInfo), NextPageToken: next}, err)
}

// DescribeTopic returns a topic's config and its partitions' state.
func (s *Server) DescribeTopic(ctx context.Context, req *pb.DescribeTopicRequest) (*pb.DescribeTopicResponse, error) {
	if req.ConfigOnly {
		t, err := s.b.TopicLayout(ctx, principal(ctx), req.Name)
		if err != nil {
			return nil, err
		}
		return &pb.DescribeTopicResponse{Topic: topicInfo(t.Config)}, nil
	}
	t, err := s.b.Topic(ctx, principal(ctx), req.Name)
	if err != nil {
		return nil, err
	}
	cluster := s.b.Members() != nil
	return &pb.DescribeTopicResponse{Topic: topicInfo(t.Config), Partitions: each(t.Partitions, func(p broker.PartitionInfo) *pb.PartitionInfo {
		pi := &pb.PartitionInfo{Partition: p.ID, LogStartOffset: p.LogStart,
			HighWatermark: p.HighWatermark, SizeBytes: p.SizeBytes, Segments: p.Segments}
		if cluster { // empty on a single node (the API's promise)
			pi.Leader, pi.Replicas = p.Leader, p.Replicas
		}
		return pi
	})}, nil
}

// AlterTopic changes a topic's retention and segment settings at runtime
// and, with partitions set, adds partitions (after the settings change).
func (s *Server) AlterTopic(ctx context.Context, req *pb.AlterTopicRequest) (*pb.AlterTopicResponse, error) {
	if req.Partitions < 0 {
		return nil, invalidArg("alter topic: partitions must be the new total count (more than the topic has), got %d", req.Partitions)
	}
	c, err := s.alterTopic(ctx, req)
	return reply(&pb.AlterTopicResponse{Topic: topicInfo(c)}, err)
}

// alterTopic applies the settings a request sets, then its partition
// count. A request that sets neither answers the topic's config.
func (s *Server) alterTopic(ctx context.Context, req *pb.AlterTopicRequest) (broker.TopicConfig, error) {
	ch := configChange(req.Config)
	var (
		c   broker.TopicConfig
		err error
	)
	if ch != (broker.ConfigChange{}) || req.Partitions == 0 {
		if c, err = s.b.AlterTopic(ctx, principal(ctx), req.Name, ch); err != nil {
			return c, err
		}
	}
	if req.Partitions > 0 {
		c, err = s.b.AddPartitions(ctx, principal(ctx), req.Name, req.Partitions)
	}
	return c, err
}

// DeleteTopic deletes a topic, its data and its committed offsets.
func (s *Server) DeleteTopic(ctx context.Context, req *pb.DeleteTopicRequest) (*pb.DeleteTopicResponse, error) {
	return reply(&pb.DeleteTopicResponse{}, s.b.DeleteTopic(ctx, principal(ctx), req.Name))
}

// DeleteRecords moves a partition's log start forward through the broker
// (delete on the topic, as Kafka's DeleteRecords), on the partition's
// leader: a node that does not lead it forwards the request there.
func (s *Server) DeleteRecords(ctx context.Context, req *pb.DeleteRecordsRequest) (*pb.DeleteRecordsResponse, error) {
	start, err := s.b.Forward().DeleteRecords(ctx, principal(ctx), req.Topic, req.Partition, req.BeforeOffset)
	return reply(&pb.DeleteRecordsResponse{LogStartOffset: start}, err)
}

func configChange(c *pb.TopicConfig) broker.ConfigChange {
	if c == nil {
		return broker.ConfigChange{}
	}
	return broker.ConfigChange{
		RetentionMs:      c.RetentionMs,
		RetentionBytes:   c.RetentionBytes,
		RetentionRecords: c.RetentionRecords,
		SegmentBytes:     c.SegmentBytes,
		SegmentMs:        c.SegmentMs,

		CleanupPolicy:          c.CleanupPolicy,
		MinCompactionLagMs:     c.MinCompactionLagMs,
		MaxCompactionLagMs:     c.MaxCompactionLagMs,
		DeleteRetentionMs:      c.DeleteRetentionMs,
		MinCleanableDirtyRatio: c.MinCleanableDirtyRatio,
	}
}

func topicInfo(c broker.TopicConfig) *pb.TopicInfo {
	cl := c.Cleanups()
	return &pb.TopicInfo{
		Name:       c.Name,
		Partitions: c.Partitions,
		Replicas:   c.Replicas,
		CreatedMs:  c.CreatedMs,
		Config: &pb.TopicConfig{
			RetentionMs:      &c.RetentionMs,
			RetentionBytes:   &c.RetentionBytes,
			RetentionRecords: &c.RetentionRecords,
			SegmentBytes:     &c.SegmentBytes,
			SegmentMs:        &c.SegmentMs,

			CleanupPolicy:          &cl.Policy,
			MinCompactionLagMs:     &cl.MinCompactionLagMs,
			MaxCompactionLagMs:     &cl.MaxCompactionLagMs,
			DeleteRetentionMs:      &cl.DeleteRetentionMs,
			MinCleanableDirtyRatio: &cl.MinCleanableDirtyRatio,
		},
	}
}

package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

// CreateTopic creates a topic.
func (s *Server) CreateTopic(ctx context.Context, req *pb.CreateTopicRequest) (*pb.CreateTopicResponse, error) {
	if err := s.disk.checkMetadata(); err != nil {
		return nil, err
	}
	if err := routing.ValidateTopicName(req.Name); err != nil {
		return nil, invalidArg("create topic: %v", err)
	}
	if req.Partitions <= 0 {
		return nil, invalidArg("create topic: partitions must be at least 1, got %d", req.Partitions)
	}
	if s.cl != nil {
		return metaWrite(s, ctx, pb.Admin_CreateTopic_FullMethodName, req, &pb.CreateTopicResponse{}, func() (*pb.CreateTopicResponse, error) {
			return s.cl.createTopic(ctx, req)
		})
	}
	replicas := req.Replicas
	if replicas == 0 {
		replicas = 1
	}
	if replicas != 1 {
		return nil, invalidArg("create topic: this node runs alone, so replicas must be 1, got %d (start a cluster for more)", replicas)
	}
	c := partition.DefaultConfig(req.Name)
	c.Partitions = req.Partitions
	c.Replicas = replicas
	c = c.Apply(configChange(req.Config))
	if _, err := s.topics.Config(req.Name); err == nil {
		return nil, toStatus(fmt.Errorf("%w: %q", partition.ErrTopicExists, req.Name))
	}
	// Offsets left by a deleted topic of the same name (a crash between the
	// two steps of DeleteTopic) must not pass to the new one.
	if err := s.offsets.DeleteTopic(req.Name); err != nil {
		return nil, toStatus(err)
	}
	c, err := s.topics.Create(c)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CreateTopicResponse{Topic: topicInfo(c)}, nil
}

// MaxListTopicsPage is the most topics one ListTopics answer holds (and
// its default page size): a page of the longest names is about 0.3 MiB,
// well within grpc's default 4 MiB message.
const MaxListTopicsPage = 1000

// ListTopics lists topics in name order, one page at a time: a page
// starts after the topic named by page_token (the last of the previous
// page), so topics created or deleted between pages shift nothing.
func (s *Server) ListTopics(ctx context.Context, req *pb.ListTopicsRequest) (*pb.ListTopicsResponse, error) {
	size := int(req.PageSize)
	switch {
	case size < 0:
		return nil, invalidArg("list topics: page_size must be >= 0 (0: %d), got %d", MaxListTopicsPage, size)
	case size == 0 || size > MaxListTopicsPage:
		size = MaxListTopicsPage
	}
	if req.PageToken != "" {
		if err := routing.ValidateTopicName(req.PageToken); err != nil {
			return nil, invalidArg("list topics: page_token %q is not one this server gave: send the previous answer's next_page_token, or none for the first page", req.PageToken)
		}
	}
	all := s.topics.List()
	i, _ := slices.BinarySearchFunc(all, req.PageToken, func(c partition.TopicConfig, name string) int { return strings.Compare(c.Name, name) })
	if i < len(all) && all[i].Name == req.PageToken {
		i++
	}
	resp := &pb.ListTopicsResponse{}
	for _, c := range all[i:min(i+size, len(all))] {
		resp.Topics = append(resp.Topics, topicInfo(c))
	}
	if i+size < len(all) {
		resp.NextPageToken = all[i+size-1].Name
	}
	return resp, nil
}

// DescribeTopic returns a topic's config and its partitions' state.
func (s *Server) DescribeTopic(ctx context.Context, req *pb.DescribeTopicRequest) (*pb.DescribeTopicResponse, error) {
	c, parts, err := s.topics.Partitions(req.Name)
	if err != nil {
		// In a cluster this node may not have the topic yet.
		return nil, s.topicLookup(ctx, req.Name, err)
	}
	resp := &pb.DescribeTopicResponse{Topic: topicInfo(c)}
	for _, p := range parts {
		pi := &pb.PartitionInfo{
			Partition:      p.ID,
			LogStartOffset: p.Log.StartOffset(),
			HighWatermark:  p.Log.HighWatermark(),
			SizeBytes:      p.Log.Size(),
			Segments:       int32(len(p.Log.Segments())),
		}
		if s.cl != nil {
			// The bounds are the leader's (size and segments stay this
			// node's replica's, 0 without one).
			if l, err := s.cl.partitionLog(ctx, p); err == nil {
				pi.LogStartOffset, pi.HighWatermark = l.StartOffset(), l.HighWatermark()
			}
		}
		resp.Partitions = append(resp.Partitions, pi)
	}
	return resp, nil
}

// AlterTopic changes a topic's retention and segment settings at runtime.
func (s *Server) AlterTopic(ctx context.Context, req *pb.AlterTopicRequest) (*pb.AlterTopicResponse, error) {
	// Lowering retention is how a full disk is freed: it passes until even
	// its few bytes may not fit.
	if err := s.disk.checkRemedy(); err != nil {
		return nil, err
	}
	if s.cl != nil {
		return metaWrite(s, ctx, pb.Admin_AlterTopic_FullMethodName, req, &pb.AlterTopicResponse{}, func() (*pb.AlterTopicResponse, error) {
			return s.cl.alterTopic(ctx, req)
		})
	}
	c, err := s.topics.Alter(req.Name, configChange(req.Config))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.AlterTopicResponse{Topic: topicInfo(c)}, nil
}

// DeleteTopic deletes a topic, its data and its committed offsets.
func (s *Server) DeleteTopic(ctx context.Context, req *pb.DeleteTopicRequest) (*pb.DeleteTopicResponse, error) {
	if s.cl != nil {
		return metaWrite(s, ctx, pb.Admin_DeleteTopic_FullMethodName, req, &pb.DeleteTopicResponse{}, func() (*pb.DeleteTopicResponse, error) {
			return s.cl.deleteTopic(ctx, req)
		})
	}
	if err := s.topics.Delete(req.Name); err != nil {
		return nil, toStatus(err)
	}
	if err := s.offsets.DeleteTopic(req.Name); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DeleteTopicResponse{}, nil
}

func configChange(c *pb.TopicConfig) partition.ConfigChange {
	if c == nil {
		return partition.ConfigChange{}
	}
	return partition.ConfigChange{
		RetentionMs:      c.RetentionMs,
		RetentionBytes:   c.RetentionBytes,
		RetentionRecords: c.RetentionRecords,
		SegmentBytes:     c.SegmentBytes,
		SegmentMs:        c.SegmentMs,
	}
}

func topicInfo(c partition.TopicConfig) *pb.TopicInfo {
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
		},
	}
}

package server

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The topic changes the broker passes to the metadata leader (cluster.Peers)
// when a front-end's request reaches a node that does not lead it: the
// Kafka listener's CreateTopics, DeleteTopics, AlterConfigs, ... (the gRPC
// API's own requests too, then carrying their incoming credentials).

// as is ctx carrying principal to the node asked, unless ctx is a gRPC
// request of this node's, whose own credentials forwardAuth passes on.
func as(ctx context.Context, principal string) context.Context {
	if _, ok := ctx.Value(incomingKey{}).(incoming); ok {
		return ctx
	}
	p, err := broker.Principal(principal).Auth()
	if err != nil || p.IsZero() {
		p = auth.Anonymous
	}
	return metadata.AppendToOutgoingContext(ctx, forwardedPrincipalKey, p.String())
}

// CreateTopic implements cluster.Peers.
func (f *forwarder) CreateTopic(ctx context.Context, addr, principal string, c partition.TopicConfig) (partition.TopicConfig, error) {
	req := &pb.CreateTopicRequest{Name: c.Name, Partitions: c.Partitions, Replicas: c.Replicas, Config: topicInfo(c).Config}
	resp := &pb.CreateTopicResponse{}
	if err := f.invoke(as(ctx, principal), addr, pb.Admin_CreateTopic_FullMethodName, req, resp); err != nil {
		return c, fromStatus(err)
	}
	return topicConfig(resp.GetTopic()), nil
}

// AlterTopic implements cluster.Peers.
func (f *forwarder) AlterTopic(ctx context.Context, addr, principal, topic string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	req := &pb.AlterTopicRequest{Name: topic, Config: &pb.TopicConfig{RetentionMs: ch.RetentionMs, RetentionBytes: ch.RetentionBytes,
		RetentionRecords: ch.RetentionRecords, SegmentBytes: ch.SegmentBytes, SegmentMs: ch.SegmentMs}}
	return f.alter(ctx, addr, principal, req)
}

// AddPartitions implements cluster.Peers.
func (f *forwarder) AddPartitions(ctx context.Context, addr, principal, topic string, count int32) (partition.TopicConfig, error) {
	return f.alter(ctx, addr, principal, &pb.AlterTopicRequest{Name: topic, Partitions: count})
}

func (f *forwarder) alter(ctx context.Context, addr, principal string, req *pb.AlterTopicRequest) (partition.TopicConfig, error) {
	resp := &pb.AlterTopicResponse{}
	if err := f.invoke(as(ctx, principal), addr, pb.Admin_AlterTopic_FullMethodName, req, resp); err != nil {
		return partition.TopicConfig{}, fromStatus(err)
	}
	return topicConfig(resp.GetTopic()), nil
}

// DeleteTopic implements cluster.Peers.
func (f *forwarder) DeleteTopic(ctx context.Context, addr, principal, topic string) error {
	err := f.invoke(as(ctx, principal), addr, pb.Admin_DeleteTopic_FullMethodName, &pb.DeleteTopicRequest{Name: topic}, &pb.DeleteTopicResponse{})
	return fromStatus(err)
}

// topicConfig is topicInfo read back.
func topicConfig(t *pb.TopicInfo) partition.TopicConfig {
	c := t.GetConfig()
	return partition.TopicConfig{Name: t.GetName(), Partitions: t.GetPartitions(), Replicas: t.GetReplicas(), CreatedMs: t.GetCreatedMs(),
		RetentionMs: c.GetRetentionMs(), RetentionBytes: c.GetRetentionBytes(), RetentionRecords: c.GetRetentionRecords(),
		SegmentBytes: c.GetSegmentBytes(), SegmentMs: c.GetSegmentMs()}
}

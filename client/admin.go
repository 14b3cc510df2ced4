package client

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Unlimited is the value of a TopicConfig limit that does not apply.
const Unlimited = -1

// AllPartitions selects every partition of a topic where a partition is asked.
const AllPartitions = -1

// TopicConfig is a topic's retention and segment policy. In requests a zero
// field is unset (create: the server default; alter: unchanged) and
// Unlimited (-1) removes the limit. In answers every field is set.
type TopicConfig struct {
	RetentionTime    time.Duration // by record age; default 7 days
	RetentionBytes   int64         // per partition; default unlimited
	RetentionRecords int64         // per partition; default unlimited
	SegmentBytes     int64         // roll the active segment at this size; default 128 MiB
	SegmentAge       time.Duration // roll the active segment at this age; default 7 days

	// Compaction (docs/compaction.md). Zero values are unset: the
	// default at create, the current value at alter.
	CleanupPolicy          string        // "delete" (default), "compact" or "compact,delete"
	MinCompactionLag       time.Duration // records younger are never compacted; default 0
	MaxCompactionLag       time.Duration // segments older are cleaned whatever the dirty ratio; default unlimited
	DeleteRetention        time.Duration // how long a tombstone stays readable; default 1 day
	MinCleanableDirtyRatio float64       // clean once this share of the log is dirty; default 0.5
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	Partitions int32
	Replicas   int32
	Config     TopicConfig
	Created    time.Time
}

// PartitionInfo is one partition's state.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
	SizeBytes      int64
	Segments       int32
	Leader         string   // node id; empty on a single node
	Replicas       []string // node ids
}

// TopicDetail is a topic with the state of each partition.
type TopicDetail struct {
	Topic      TopicInfo
	Partitions []PartitionInfo
}

// PartitionOffset is a resolved position of one partition.
type PartitionOffset struct {
	Partition      int32
	Offset         int64
	LogStartOffset int64
	HighWatermark  int64
}

// CommittedOffset is a consumer group's committed offset of one partition.
// Offset is the next offset the group will consume. The fields after
// Metadata are filled by FetchOffsets and ResetOffsets.
type CommittedOffset struct {
	Topic          string
	Partition      int32
	Offset         int64
	Metadata       string
	CommitTime     time.Time
	LogStartOffset int64
	HighWatermark  int64
	Lag            int64 // HighWatermark - Offset (from the log start when trimmed)
	Trimmed        bool  // Offset is below the log start: records were lost to retention
}

// Admin manages topics and consumer groups' offsets. Get one with
// Client.Admin; it shares the Client's connections.
type Admin struct{ c *Client }

// Admin returns the Client's Admin.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

func (a *Admin) adminCall(ctx context.Context, fn func(ctx context.Context, ac logdv1.AdminClient) error) error {
	return a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		return fn(ctx, logdv1.NewAdminClient(cc))
	})
}

func (a *Admin) offsetsCall(ctx context.Context, fn func(ctx context.Context, oc logdv1.OffsetsClient) error) error {
	return a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		return fn(ctx, logdv1.NewOffsetsClient(cc))
	})
}

// TopicOptions are the settings of a new topic. Zero values take the
// defaults.
type TopicOptions struct {
	Partitions int32 // default 1
	Replicas   int32 // copies of each partition; default: the server's (1 on a single node, 3 in a cluster)
	Config     TopicConfig
}

// setupWait is how long a cluster may wait for the leaders of partitions
// it has just created before it answers CreateTopic or AddPartitions: each
// attempt of those calls gets it beyond the call timeout, and the server
// waits until just before the attempt's deadline (cluster.setupContext).
// Without it the call timeout (10 s by default) ended the call first, and a create of thousands of partitions that the
// cluster carried out, or answered "created, partition N has no leader
// yet", read as a server that did not answer.
const setupWait = 10 * time.Second

// CreateTopic creates a topic. It returns once the topic is usable: in a
// cluster, every partition has a leader that takes a produce, so Produce
// right after it never sees ErrTopicNotFound. It fails with ErrTopicExists
// when the topic exists, ErrInvalidArgument for a bad name or
// configuration.
func (a *Admin) CreateTopic(ctx context.Context, name string, opts TopicOptions) (TopicInfo, error) {
	if opts.Partitions == 0 {
		opts.Partitions = 1
	}
	var resp *logdv1.CreateTopicResponse
	err := a.adminCall(withServerWait(ctx, setupWait), func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.CreateTopic(ctx, &logdv1.CreateTopicRequest{
			Name: name, Partitions: opts.Partitions, Replicas: opts.Replicas, Config: opts.Config.proto(),
		})
		return err
	})
	if err != nil {
		return TopicInfo{}, fmt.Errorf("create topic %q: %w", name, err)
	}
	return topicInfo(resp.GetTopic()), nil
}

// ListTopics lists every topic, in name order, following the server's
// pages (one request per page of up to 1000 topics).
func (a *Admin) ListTopics(ctx context.Context) ([]TopicInfo, error) {
	var out []TopicInfo
	token := ""
	for {
		var resp *logdv1.ListTopicsResponse
		err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) (err error) {
			resp, err = ac.ListTopics(ctx, &logdv1.ListTopicsRequest{PageToken: token})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		for _, t := range resp.GetTopics() {
			out = append(out, topicInfo(t))
		}
		next := resp.GetNextPageToken()
		if next == "" || next <= token {
			// The last page; or a token that does not move on, which
			// a correct server never sends: stop rather than loop.
			return out, nil
		}
		token = next
	}
}

// Topic returns a topic's configuration and partition count, without its
// partitions' state: on a cluster DescribeTopic asks every partition's
// leader for its offsets, which this does not.
func (a *Admin) Topic(ctx context.Context, name string) (TopicInfo, error) {
	var resp *logdv1.DescribeTopicResponse
	err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.DescribeTopic(ctx, &logdv1.DescribeTopicRequest{Name: name, ConfigOnly: true})
		return err
	})
	if err != nil {
		return TopicInfo{}, fmt.Errorf("describe topic %q: %w", name, err)
	}
	return topicInfo(resp.GetTopic()), nil
}

// DescribeTopic returns a topic's configuration and partitions' state.
func (a *Admin) DescribeTopic(ctx context.Context, name string) (TopicDetail, error) {
	var resp *logdv1.DescribeTopicResponse
	err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.DescribeTopic(ctx, &logdv1.DescribeTopicRequest{Name: name})
		return err
	})
	if err != nil {
		return TopicDetail{}, fmt.Errorf("describe topic %q: %w", name, err)
	}
	d := TopicDetail{Topic: topicInfo(resp.GetTopic())}
	for _, p := range resp.GetPartitions() {
		d.Partitions = append(d.Partitions, PartitionInfo{
			Partition: p.GetPartition(), LogStartOffset: p.GetLogStartOffset(),
			HighWatermark: p.GetHighWatermark(), SizeBytes: p.GetSizeBytes(),
			Segments: p.GetSegments(), Leader: p.GetLeader(), Replicas: p.GetReplicas(),
		})
	}
	return d, nil
}

// AlterTopic changes the set fields of cfg; the change takes effect at the
// server's next retention pass, without a restart.
func (a *Admin) AlterTopic(ctx context.Context, name string, cfg TopicConfig) (TopicInfo, error) {
	var resp *logdv1.AlterTopicResponse
	err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.AlterTopic(ctx, &logdv1.AlterTopicRequest{Name: name, Config: cfg.proto()})
		return err
	})
	if err != nil {
		return TopicInfo{}, fmt.Errorf("alter topic %q: %w", name, err)
	}
	return topicInfo(resp.GetTopic()), nil
}

// AddPartitions grows a topic to count partitions, the new total: more
// than it has (partitions are only added, never removed; ErrInvalidArgument
// otherwise). It returns once every new partition takes writes. Records
// with a key hash over the new count from then on, so a key's new records
// may go to another partition than its old ones (as in Kafka): per-key
// order holds only within each partition. Producers of other Clients see
// the new partitions within PartitionCountMaxAge; consumer groups on the
// topic rebalance and read the new partitions from their start.
func (a *Admin) AddPartitions(ctx context.Context, name string, count int32) (TopicInfo, error) {
	var resp *logdv1.AlterTopicResponse
	err := a.adminCall(withServerWait(ctx, setupWait), func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.AlterTopic(ctx, &logdv1.AlterTopicRequest{Name: name, Partitions: count})
		return err
	})
	a.c.topics.forget(name)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("add partitions to topic %q: %w", name, err)
	}
	return topicInfo(resp.GetTopic()), nil
}

// DeleteTopic deletes a topic and its records.
func (a *Admin) DeleteTopic(ctx context.Context, name string) error {
	err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) error {
		_, err := ac.DeleteTopic(ctx, &logdv1.DeleteTopicRequest{Name: name})
		return err
	})
	a.c.topics.forget(name)
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// ToHighWatermark is the DeleteRecords offset that deletes every record
// a partition holds: its high watermark.
const ToHighWatermark = -1

// DeleteRecords deletes a partition's records below offset (ToHighWatermark:
// all of them) by moving its log start forward, as Kafka's DeleteRecords,
// and returns the log start now in force. A read below it is then an
// *OutOfRangeError; the bytes go when retention deletes whole segments. An
// offset at or below the log start changes nothing; one above the high
// watermark is ErrOffsetOutOfRange. It needs delete on the topic.
func (a *Admin) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	var resp *logdv1.DeleteRecordsResponse
	err := a.adminCall(ctx, func(ctx context.Context, ac logdv1.AdminClient) (err error) {
		resp, err = ac.DeleteRecords(ctx, &logdv1.DeleteRecordsRequest{Topic: topic, Partition: partition, BeforeOffset: offset})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete records of %q partition %d below offset %d: %w", topic, partition, offset, err)
	}
	return resp.GetLogStartOffset(), nil
}

// ListOffsets resolves pos for the given partitions of topic (none: all). An
// AtOffset position is returned as given, with each partition's bounds.
// Latest is each partition's last stable offset (ListOffsetsIsolated with
// ReadCommitted): where a read_committed consumer starting at the end
// begins.
func (a *Admin) ListOffsets(ctx context.Context, topic string, partitions []int32, pos Position) ([]PartitionOffset, error) {
	return a.ListOffsetsIsolated(ctx, topic, partitions, pos, ReadCommitted)
}

// ListOffsetsIsolated is ListOffsets for a reader of isolation iso: Latest
// is each partition's last stable offset under ReadCommitted (before the
// oldest transaction still open in it), its high watermark under
// ReadUncommitted.
func (a *Admin) ListOffsetsIsolated(ctx context.Context, topic string, partitions []int32, pos Position, iso Isolation) ([]PartitionOffset, error) {
	spec, ts := pos.spec()
	var resp *logdv1.ListOffsetsResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewLogClient(cc).ListOffsets(ctx, &logdv1.ListOffsetsRequest{
			Topic: topic, Partitions: partitions, Spec: spec, TimestampMs: ts, Isolation: iso.proto(),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list offsets of %q (%s): %w", topic, pos, err)
	}
	out := make([]PartitionOffset, 0, len(resp.GetPartitions()))
	for _, p := range resp.GetPartitions() {
		po := PartitionOffset{Partition: p.GetPartition(), Offset: p.GetOffset(),
			LogStartOffset: p.GetLogStartOffset(), HighWatermark: p.GetHighWatermark()}
		if off, ok := pos.Offset(); ok {
			po.Offset = off
		}
		out = append(out, po)
	}
	return out, nil
}

// CommitOffsets stores offsets (topic, partition, offset, metadata) for group,
// atomically.
func (a *Admin) CommitOffsets(ctx context.Context, group string, offsets []CommittedOffset) error {
	req := &logdv1.CommitOffsetsRequest{Group: group}
	for _, o := range offsets {
		req.Offsets = append(req.Offsets, &logdv1.CommittedOffset{
			Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata,
		})
	}
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) error {
		_, err := oc.CommitOffsets(ctx, req)
		return err
	})
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, err)
	}
	return nil
}

// FetchOffsets returns group's committed offsets of topic (empty: of every
// topic it committed), with each partition's bounds and the group's lag.
func (a *Admin) FetchOffsets(ctx context.Context, group, topic string) ([]CommittedOffset, error) {
	var resp *logdv1.FetchOffsetsResponse
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) (err error) {
		resp, err = oc.FetchOffsets(ctx, &logdv1.FetchOffsetsRequest{Group: group, Topic: topic})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %q: %w", group, err)
	}
	return committedOffsets(resp.GetOffsets()), nil
}

// ListGroups lists the consumer groups that committed offsets.
func (a *Admin) ListGroups(ctx context.Context) ([]string, error) {
	var resp *logdv1.ListGroupsResponse
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) (err error) {
		resp, err = oc.ListGroups(ctx, &logdv1.ListGroupsRequest{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return resp.GetGroups(), nil
}

// ResetOffsets sets group's committed offset of topic's partition (or of
// every partition with AllPartitions) to pos, and returns the new offsets.
func (a *Admin) ResetOffsets(ctx context.Context, group, topic string, partition int32, pos Position) ([]CommittedOffset, error) {
	req := &logdv1.ResetOffsetsRequest{Group: group, Topic: topic}
	if partition != AllPartitions {
		req.Partition = proto.Int32(partition)
	}
	if off, ok := pos.Offset(); ok {
		req.Offset = proto.Int64(off)
	} else {
		req.Spec, req.TimestampMs = pos.spec()
	}
	var resp *logdv1.ResetOffsetsResponse
	err := a.offsetsCall(ctx, func(ctx context.Context, oc logdv1.OffsetsClient) (err error) {
		resp, err = oc.ResetOffsets(ctx, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reset offsets of group %q on %q to %s: %w", group, topic, pos, err)
	}
	return committedOffsets(resp.GetOffsets()), nil
}

func committedOffsets(in []*logdv1.CommittedOffset) []CommittedOffset {
	out := make([]CommittedOffset, 0, len(in))
	for _, o := range in {
		co := CommittedOffset{
			Topic: o.GetTopic(), Partition: o.GetPartition(), Offset: o.GetOffset(),
			Metadata: o.GetMetadata(), LogStartOffset: o.GetLogStartOffset(),
			HighWatermark: o.GetHighWatermark(), Lag: o.GetLag(), Trimmed: o.GetTrimmed(),
		}
		if ms := o.GetCommitTimeMs(); ms > 0 {
			co.CommitTime = time.UnixMilli(ms)
		}
		out = append(out, co)
	}
	return out
}

func topicInfo(t *logdv1.TopicInfo) TopicInfo {
	ti := TopicInfo{Name: t.GetName(), Partitions: t.GetPartitions(), Replicas: t.GetReplicas()}
	if ms := t.GetCreatedMs(); ms > 0 {
		ti.Created = time.UnixMilli(ms)
	}
	c := t.GetConfig()
	ti.Config = TopicConfig{
		RetentionTime:    msDuration(c.GetRetentionMs()),
		RetentionBytes:   c.GetRetentionBytes(),
		RetentionRecords: c.GetRetentionRecords(),
		SegmentBytes:     c.GetSegmentBytes(),
		SegmentAge:       msDuration(c.GetSegmentMs()),

		CleanupPolicy:          c.GetCleanupPolicy(),
		MinCompactionLag:       msDuration(c.GetMinCompactionLagMs()),
		MaxCompactionLag:       msDuration(c.GetMaxCompactionLagMs()),
		DeleteRetention:        msDuration(c.GetDeleteRetentionMs()),
		MinCleanableDirtyRatio: c.GetMinCleanableDirtyRatio(),
	}
	return ti
}

// msDuration keeps Unlimited (-1) as -1; a time too long for a Duration
// (Kafka's 2^63-1 ms for "never") is Unlimited too.
func msDuration(ms int64) time.Duration {
	if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return Unlimited
	}
	return time.Duration(ms) * time.Millisecond
}

func durationMs(d time.Duration) int64 {
	if d < 0 {
		return Unlimited
	}
	return d.Milliseconds()
}

func (c TopicConfig) proto() *logdv1.TopicConfig {
	p := &logdv1.TopicConfig{}
	set := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		if v < 0 {
			v = Unlimited
		}
		return proto.Int64(v)
	}
	p.RetentionMs = set(durationMs(c.RetentionTime))
	p.RetentionBytes = set(c.RetentionBytes)
	p.RetentionRecords = set(c.RetentionRecords)
	p.SegmentBytes = set(c.SegmentBytes)
	p.SegmentMs = set(durationMs(c.SegmentAge))
	if c.CleanupPolicy != "" {
		p.CleanupPolicy = proto.String(c.CleanupPolicy)
	}
	p.MinCompactionLagMs = set(durationMs(c.MinCompactionLag))
	if c.MaxCompactionLag < 0 {
		p.MaxCompactionLagMs = proto.Int64(math.MaxInt64) // Kafka's "never"
	} else {
		p.MaxCompactionLagMs = set(durationMs(c.MaxCompactionLag))
	}
	p.DeleteRetentionMs = set(durationMs(c.DeleteRetention))
	if c.MinCleanableDirtyRatio != 0 {
		p.MinCleanableDirtyRatio = proto.Float64(c.MinCleanableDirtyRatio)
	}
	return p
}

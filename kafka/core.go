package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// Core is what the listener needs of the node's core (package broker's
// *Broker implements it). Tests use a fake.
type Core interface {
	LocalNode() Node
	Nodes(ctx context.Context) ([]Node, error)
	Topics(ctx context.Context, p Principal) ([]TopicInfo, error)
	Topic(ctx context.Context, p Principal, name string) (TopicInfo, error)
	CreateTopic(ctx context.Context, p Principal, cfg partition.TopicConfig) (partition.TopicConfig, error)
	DeleteTopic(ctx context.Context, p Principal, name string) error
	StartProduce(ctx context.Context, r ProduceRequest) (wait func() (ProduceResult, error), err error)
	NewProducerID(ctx context.Context) (id int64, epoch int16, err error)
	Fetch(ctx context.Context, r FetchRequest) (FetchResult, error)
	ListOffset(ctx context.Context, p Principal, topic string, partition int32, spec int64) (offset, timestampMs int64, err error)
	CommitOffsets(ctx context.Context, p Principal, group, member string, generation int32, cs []offsets.Committed) error
	FetchOffsets(ctx context.Context, p Principal, group string, topics []string) ([]offsets.Committed, error)
	Coordinator() (*groups.Coordinator, error)
}

// The core's types. Until package broker lands these mirror
// /work/shared-contract/broker-api.md; then they become aliases of broker's.

type Principal string

type Acks int

const (
	AcksLeader Acks = 1
	AcksAll    Acks = -1
)

const (
	Earliest = -2
	Latest   = -1
)

type Node struct {
	ID                                     string
	KafkaID                                int32
	APIAddr, KafkaAddr, HTTPAddr, RaftAddr string
}

type PartitionInfo struct {
	ID            int32
	LogStart      int64
	HighWatermark int64
	SizeBytes     int64
	Leader        string
	Replicas, ISR []string
	LeaderEpoch   int32
}

type TopicInfo struct {
	Config     partition.TopicConfig
	Partitions []PartitionInfo
}

type ProduceRequest struct {
	Principal Principal
	Topic     string
	Partition int32
	Batch     []byte
	Acks      Acks
}

type ProduceResult struct {
	BaseOffset   int64
	LogStart     int64
	AppendTimeMs int64
	Duplicate    bool
}

type FetchPartition struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int
}

type FetchRequest struct {
	Principal          Principal
	Partitions         []FetchPartition
	MinBytes, MaxBytes int
	MaxWait            time.Duration
}

type FetchedPartition struct {
	Topic                   string
	Partition               int32
	Err                     error
	Batches                 []byte
	HighWatermark, LogStart int64
}

type FetchResult struct {
	Partitions []FetchedPartition
	Release    func()
}

var (
	ErrUnknownTopic     = errors.New("broker: unknown topic")
	ErrUnknownPartition = errors.New("broker: unknown partition")
	ErrTopicExists      = errors.New("broker: topic exists")
	ErrNoLeader         = errors.New("broker: no leader")
	ErrInvalidBatch     = errors.New("broker: invalid batch")
	ErrBatchTooLarge    = errors.New("broker: batch too large")
	ErrDiskFull         = errors.New("broker: disk full")
	ErrInvalidArgument  = errors.New("broker: invalid argument")
	ErrDenied           = errors.New("broker: denied")
	ErrUnavailable      = errors.New("broker: unavailable")
	ErrShuttingDown     = errors.New("broker: shutting down")
)

type NotLeaderError struct {
	What      string
	Leader    Node
	Untouched bool
}

func (e *NotLeaderError) Error() string { return "broker: not the leader" }

type NotCoordinatorError struct{ Leader Node }

func (e *NotCoordinatorError) Error() string { return "broker: not the coordinator" }

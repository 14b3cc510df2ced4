package kafka

import (
	"context"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// Core is what the listener needs of the node's core: the methods of
// package broker's *Broker it calls. The unit tests use an in-memory fake;
// the end-to-end tests the real broker.
type Core interface {
	LocalNode() Node
	Nodes(ctx context.Context) ([]Node, error)
	// NodeLive reports whether a node counts as up: Metadata lists
	// live brokers only, as Kafka does.
	NodeLive(ctx context.Context, id string) bool
	Topic(ctx context.Context, p Principal, name string) (TopicInfo, error)
	// TopicLayouts and TopicLayout answer Metadata: leaders, replicas
	// and epochs without a Raft round per partition.
	TopicLayouts(ctx context.Context, p Principal) ([]TopicInfo, error)
	TopicLayout(ctx context.Context, p Principal, name string) (TopicInfo, error)
	CreateTopic(ctx context.Context, p Principal, cfg broker.TopicConfig) (broker.TopicConfig, error)
	DeleteTopic(ctx context.Context, p Principal, name string) error
	TopicConfigs(ctx context.Context, p Principal) ([]broker.TopicConfig, error)
	AlterTopic(ctx context.Context, p Principal, name string, ch broker.ConfigChange) (broker.TopicConfig, error)
	AddPartitions(ctx context.Context, p Principal, topic string, count int32) (broker.TopicConfig, error)
	StartProduce(ctx context.Context, r ProduceRequest) (ProduceFuture, error)
	// MaxBatchBytes is the node's bound on a produced batch, what a
	// topic's max.message.bytes is when not set.
	MaxBatchBytes() int
	NewProducerID(ctx context.Context) (id int64, epoch int16, err error)
	Fetch(ctx context.Context, r FetchRequest) (FetchResult, error)
	ListOffset(ctx context.Context, p Principal, topic string, partition int32, spec int64) (offset, timestampMs int64, err error)
	// DeleteRecords moves a partition's log start (-1: to the high
	// watermark) and returns the start now in force.
	DeleteRecords(ctx context.Context, p Principal, topic string, partition int32, offset int64) (int64, error)
	// EpochEnd is the end offset of a leader epoch and the largest epoch
	// at or below it a batch holds (OffsetForLeaderEpoch).
	EpochEnd(ctx context.Context, p Principal, topic string, partition int32, epoch int32) (found int32, end int64, err error)
	CommitOffsets(ctx context.Context, p Principal, group, member string, generation int32, cs []offsets.Committed) error
	FetchOffsets(ctx context.Context, p Principal, group string, topics []string) ([]offsets.Committed, error)
	Allowed(p Principal, op auth.Operation, r auth.Resource) bool
	// The consumer groups, each call authorized by the core: a member's
	// join, sync, heartbeat and leave (GroupMember), describe and list;
	// CoordinatesGroups says where the coordinator runs.
	GroupMember(ctx context.Context, p Principal, group string) (GroupMember, error)
	DescribeGroup(ctx context.Context, p Principal, group string) (groups.GroupDescription, error)
	ListMemberGroups(ctx context.Context, p Principal) ([]GroupListing, error)
	CoordinatesGroups() error
	ListGroups(ctx context.Context, p Principal) ([]string, error)
	DeleteGroup(ctx context.Context, p Principal, group string) error
	// The ACL store (CreateAcls, DescribeAcls, DeleteAcls): alter on the
	// cluster to change it, describe to list it.
	AddACLs(ctx context.Context, p Principal, acls ...auth.ACL) error
	RemoveACLs(ctx context.Context, p Principal, f auth.ACLFilter) ([]auth.ACL, error)
	ListACLs(ctx context.Context, p Principal, f auth.ACLFilter) ([]auth.ACL, error)
	// The users' SCRAM credentials (DescribeUserScramCredentials,
	// AlterUserScramCredentials): describe on the cluster to list them,
	// alter to change them.
	Users(ctx context.Context, p Principal) ([]string, error)
	UserMechanisms(ctx context.Context, p Principal, name string) ([]auth.ScramCredential, error)
	SetUserCredential(ctx context.Context, p Principal, name string, sc auth.ScramCredential) error
	DeleteUserCredential(ctx context.Context, p Principal, name string, m auth.Mechanism) error
	// LogDir is this node's data directory and the replicas in it
	// (DescribeLogDirs): describe on the cluster.
	LogDir(ctx context.Context, p Principal) (broker.LogDir, error)
}

var _ Core = (*broker.Broker)(nil)

// The core's types, named here for brevity.
type (
	Principal           = broker.Principal
	Acks                = broker.Acks
	Node                = broker.Node
	PartitionInfo       = broker.PartitionInfo
	TopicInfo           = broker.TopicInfo
	ProduceRequest      = broker.ProduceRequest
	ProduceResult       = broker.ProduceResult
	ProduceFuture       = broker.ProduceFuture
	FetchPartition      = broker.FetchPartition
	FetchRequest        = broker.FetchRequest
	FetchedPartition    = broker.FetchedPartition
	FetchResult         = broker.FetchResult
	NotLeaderError      = broker.NotLeaderError
	NotCoordinatorError = broker.NotCoordinatorError
	GroupMember         = broker.GroupMember
	GroupListing        = broker.GroupListing
)

const (
	AcksLeader = broker.AcksLeader
	AcksAll    = broker.AcksAll
	Earliest   = broker.Earliest
	Latest     = broker.Latest
)

// The core's errors (errors.go maps them, and the generic kinds of
// package kind).
var (
	ErrUnknownTopic     = broker.ErrUnknownTopic
	ErrUnknownPartition = broker.ErrUnknownPartition
	ErrTopicExists      = broker.ErrTopicExists
	ErrInvalidBatch     = broker.ErrInvalidBatch
	ErrBatchTooLarge    = broker.ErrBatchTooLarge
	ErrDiskFull         = broker.ErrDiskFull
	ErrDenied           = broker.ErrDenied
)

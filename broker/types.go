package broker

import (
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
)

// The storage packages' types, values and errors the front-ends use, named
// here so that a front-end imports the core (this package) and never log,
// partition or replication itself. Each is the same type or the same
// error value as the original: errors.Is matches either name.

// TopicConfig is a topic's configuration: its partitions and the
// settings its logs keep (retention, segment size, ...).
type TopicConfig = partition.TopicConfig

// ConfigChange is a change to a topic's configuration: the fields set are
// changed, the others kept.
type ConfigChange = partition.ConfigChange

// CleanupConfig is a topic's cleanup policy and compaction settings.
type CleanupConfig = partition.CleanupConfig

// Cleanup policies (Kafka's cleanup.policy).
const (
	CleanupDelete        = partition.CleanupDelete
	CleanupCompact       = partition.CleanupCompact
	CleanupCompactDelete = partition.CleanupCompactDelete
)

// DefaultCleanup is the cleanup settings a topic has until one is set.
func DefaultCleanup() CleanupConfig { return partition.DefaultCleanup() }

// ParseCleanupPolicy reads Kafka's spellings of cleanup.policy.
func ParseCleanupPolicy(s string) (string, error) { return partition.ParseCleanupPolicy(s) }

// ParseTimestampType reads Kafka's message.timestamp.type values.
func ParseTimestampType(s string) (string, error) { return partition.ParseTimestampType(s) }

// MaxPartitions is the most partitions a topic may have.
const MaxPartitions = partition.MaxPartitions

// DefaultConfig is the configuration a new topic named name gets for the
// fields its request leaves unset.
func DefaultConfig(name string) TopicConfig { return partition.DefaultConfig(name) }

// FsyncPolicy is when the logs sync what they write to disk
// (Config.Fsync).
type FsyncPolicy = log.FsyncPolicy

// FsyncNever leaves syncing to the operating system.
const FsyncNever = log.FsyncNever

var (
	// ErrInvalidConfig: a topic's configuration is out of bounds; the
	// message says which setting.
	ErrInvalidConfig = partition.ErrInvalidConfig
	// ErrOutOfOrderSequence: an idempotent producer's batch does not
	// follow the last one it wrote (an Idempotency-Key reused with other
	// records).
	ErrOutOfOrderSequence = partition.ErrOutOfOrderSequence
	// ErrPartitionClosed: the partition is closing (the node shuts down
	// or hands it over).
	ErrPartitionClosed = partition.ErrClosed
	// ErrLogClosed: the partition's log is closing.
	ErrLogClosed = log.ErrClosed
	// ErrOffsetOutOfRange: an offset outside a partition's log; most such
	// answers are an *OutOfRangeError, which carries the log's bounds.
	ErrOffsetOutOfRange = log.ErrOffsetOutOfRange
	// ErrLogInvalidBatch: the log refused a batch it cannot store as one
	// entry (too large, or not a batch).
	ErrLogInvalidBatch = log.ErrInvalidBatch
	// ErrLogCorrupt: a log's stored data does not read back.
	ErrLogCorrupt = log.ErrCorrupt
)

// TopicSetting is one topic config by its Kafka name (partition.Setting):
// the Kafka API and HTTP read and write topic configs through
// TopicSettings.
type TopicSetting = partition.Setting

// TopicSettingKind is a topic setting's value type, as Kafka describes it.
type TopicSettingKind = partition.SettingKind

// The kinds of topic settings.
const (
	SettingLong   = partition.SettingLong
	SettingInt    = partition.SettingInt
	SettingDouble = partition.SettingDouble
	SettingString = partition.SettingString
	SettingList   = partition.SettingList
)

// TopicSettings are the topic configs, in the order answers list them.
var TopicSettings = partition.Settings

// TopicSettingByName finds a topic setting by its Kafka name.
func TopicSettingByName(name string) (TopicSetting, bool) { return partition.SettingByName(name) }

// TopicSettingNames lists the topic settings' names, for errors.
var TopicSettingNames = partition.SettingNames

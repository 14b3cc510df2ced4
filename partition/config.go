package partition

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/logd/logd/routing"
)

// Sentinel errors of this package; the server maps them to gRPC codes.
var (
	ErrTopicNotFound      = errors.New("topic not found")
	ErrTopicExists        = errors.New("topic already exists")
	ErrPartitionNotFound  = errors.New("partition not found")
	ErrInvalidConfig      = errors.New("invalid topic config")
	ErrOutOfOrderSequence = errors.New("out of order sequence")
	ErrClosed             = errors.New("partition: closed")
)

// Defaults of a topic's config.
const (
	DefaultRetention    = 7 * 24 * time.Hour
	DefaultSegmentBytes = 128 << 20
	DefaultSegmentAge   = 7 * 24 * time.Hour
	MinSegmentBytes     = 4 << 10
	MaxPartitions       = 10000
	// MaxDurationMs is the largest time limit a config may hold, in the
	// ms it arrives in: the longest time.Duration (about 292 years).
	// Checking in ms, before converting, keeps a larger value from
	// wrapping around to a small duration.
	MaxDurationMs = int64(math.MaxInt64 / time.Millisecond)
)

// TopicConfig is a topic's persisted configuration. For the retention
// limits, -1 means unlimited.
type TopicConfig struct {
	Name             string `json:"name"`
	Partitions       int32  `json:"partitions"`
	Replicas         int32  `json:"replicas"`
	RetentionMs      int64  `json:"retention_ms"`
	RetentionBytes   int64  `json:"retention_bytes"`
	RetentionRecords int64  `json:"retention_records"`
	SegmentBytes     int64  `json:"segment_bytes"`
	SegmentMs        int64  `json:"segment_ms"`
	CreatedMs        int64  `json:"created_ms"`
	// Cleanup is how old records go (Kafka's cleanup.policy and the
	// compaction settings). Its zero value, what metadata written before
	// compaction existed holds, means DefaultCleanup: use Cleanups.
	Cleanup CleanupConfig `json:"cleanup,omitzero"`
	// Produce is what a produce to the topic must meet (Kafka's
	// max.message.bytes, message.timestamp.type, min.insync.replicas).
	// Its zero value, what metadata written before it existed holds,
	// means the defaults: use Produces.
	Produce ProduceConfig `json:"produce,omitzero"`
}

// Timestamp types: Kafka's message.timestamp.type values.
const (
	TimestampCreateTime    = "CreateTime"    // the producer's timestamps stand
	TimestampLogAppendTime = "LogAppendTime" // the leader stamps its clock in each batch
)

// ProduceConfig is what a produce to a topic must meet, in Kafka's terms.
type ProduceConfig struct {
	// MaxMessageBytes bounds one record batch as sent (Kafka's
	// max.message.bytes); the node's own limit (--max-batch-bytes) still
	// applies. 0: only the node's limit.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// TimestampType is CreateTime or LogAppendTime ("": CreateTime).
	TimestampType string `json:"timestamp_type,omitempty"`
	// MinInsyncReplicas: an acks=all produce is refused while fewer
	// replicas than this are in sync with the leader. 0: 1.
	MinInsyncReplicas int32 `json:"min_insync_replicas,omitempty"`
}

// Produces is the topic's produce settings, the defaults filled in.
func (c TopicConfig) Produces() ProduceConfig {
	p := c.Produce
	if p.TimestampType == "" {
		p.TimestampType = TimestampCreateTime
	}
	if p.MinInsyncReplicas == 0 {
		p.MinInsyncReplicas = 1
	}
	return p
}

// LogAppendTime reports whether the leader stamps its clock in each batch.
func (p ProduceConfig) LogAppendTime() bool { return p.TimestampType == TimestampLogAppendTime }

// ParseTimestampType accepts Kafka's message.timestamp.type values.
func ParseTimestampType(s string) (string, error) {
	switch t := strings.TrimSpace(s); t {
	case TimestampCreateTime, TimestampLogAppendTime:
		return t, nil
	}
	return "", fmt.Errorf("%w: timestamp type %q: want CreateTime or LogAppendTime", ErrInvalidConfig, s)
}

// Validate checks produce settings; errors wrap ErrInvalidConfig.
func (p ProduceConfig) Validate() error {
	if p.MaxMessageBytes < 0 || p.MaxMessageBytes > math.MaxInt32 {
		return fmt.Errorf("%w: max message bytes must be between 0 (the node's limit) and %d, got %d", ErrInvalidConfig, math.MaxInt32, p.MaxMessageBytes)
	}
	if _, err := ParseTimestampType(p.TimestampType); err != nil {
		return err
	}
	// As in Kafka, more than the topic's replicas is allowed: every
	// acks=all produce is then refused until the topic has more.
	if p.MinInsyncReplicas < 1 {
		return fmt.Errorf("%w: min insync replicas must be at least 1, got %d", ErrInvalidConfig, p.MinInsyncReplicas)
	}
	return nil
}

// Cleanup policies: Kafka's cleanup.policy values.
const (
	CleanupDelete        = "delete"         // retention deletes whole old segments
	CleanupCompact       = "compact"        // the cleaner keeps the newest record of each key
	CleanupCompactDelete = "compact,delete" // both
)

// CleanupConfig is a topic's cleanup policy and compaction settings, in
// Kafka's terms (docs/compaction.md).
type CleanupConfig struct {
	Policy string `json:"policy"`
	// MinCompactionLagMs: a record younger than this is never compacted.
	MinCompactionLagMs int64 `json:"min_compaction_lag_ms"`
	// MaxCompactionLagMs: a segment older than this is cleaned whatever
	// the dirty ratio.
	MaxCompactionLagMs int64 `json:"max_compaction_lag_ms"`
	// DeleteRetentionMs: how long a tombstone (a null value) stays
	// readable after its timestamp.
	DeleteRetentionMs int64 `json:"delete_retention_ms"`
	// MinCleanableDirtyRatio: the share of the log not yet cleaned above
	// which the cleaner runs.
	MinCleanableDirtyRatio float64 `json:"min_cleanable_dirty_ratio"`
}

// DefaultCleanup is Kafka's defaults: delete, no minimum lag, no maximum
// lag, tombstones kept a day, clean at half dirty.
func DefaultCleanup() CleanupConfig {
	return CleanupConfig{Policy: CleanupDelete, MaxCompactionLagMs: math.MaxInt64,
		DeleteRetentionMs: (24 * time.Hour).Milliseconds(), MinCleanableDirtyRatio: 0.5}
}

// Cleanups is the topic's cleanup settings, the defaults when never set.
func (c TopicConfig) Cleanups() CleanupConfig {
	if c.Cleanup == (CleanupConfig{}) {
		return DefaultCleanup()
	}
	return c.Cleanup
}

// Compacted reports whether the cleaner compacts the topic's partitions.
func (c CleanupConfig) Compacted() bool {
	return c.Policy == CleanupCompact || c.Policy == CleanupCompactDelete
}

// Deletes reports whether retention deletes the topic's old segments.
func (c CleanupConfig) Deletes() bool {
	return c.Policy == CleanupDelete || c.Policy == CleanupCompactDelete
}

// ParseCleanupPolicy accepts Kafka's spellings of cleanup.policy: a list of
// delete and compact in any order, with spaces.
func ParseCleanupPolicy(s string) (string, error) {
	var del, comp bool
	for _, p := range strings.Split(s, ",") {
		switch strings.TrimSpace(p) {
		case CleanupDelete:
			del = true
		case CleanupCompact:
			comp = true
		default:
			return "", fmt.Errorf("%w: cleanup policy %q: want delete, compact or compact,delete", ErrInvalidConfig, s)
		}
	}
	switch {
	case del && comp:
		return CleanupCompactDelete, nil
	case comp:
		return CleanupCompact, nil
	}
	return CleanupDelete, nil
}

// DefaultConfig returns the config a new topic gets for fields left unset.
func DefaultConfig(name string) TopicConfig {
	return TopicConfig{
		Name:             name,
		Partitions:       1,
		Replicas:         1,
		RetentionMs:      DefaultRetention.Milliseconds(),
		RetentionBytes:   -1,
		RetentionRecords: -1,
		SegmentBytes:     DefaultSegmentBytes,
		SegmentMs:        DefaultSegmentAge.Milliseconds(),
	}
}

// ConfigChange holds the fields a create or alter request sets; nil fields
// keep the default (create) or current value (alter).
type ConfigChange struct {
	RetentionMs      *int64
	RetentionBytes   *int64
	RetentionRecords *int64
	SegmentBytes     *int64
	SegmentMs        *int64
	// Cleanup replaces the cleanup settings whole (a replica taking the
	// metadata's config); the fields below then change single settings.
	Cleanup                *CleanupConfig
	CleanupPolicy          *string
	MinCompactionLagMs     *int64
	MaxCompactionLagMs     *int64
	DeleteRetentionMs      *int64
	MinCleanableDirtyRatio *float64
	// The produce settings (ProduceConfig): Produce replaces them whole,
	// the fields below change single ones.
	Produce           *ProduceConfig
	MaxMessageBytes   *int64
	TimestampType     *string
	MinInsyncReplicas *int32
}

// setsCleanup reports whether the change sets a single cleanup setting.
func (ch ConfigChange) setsCleanup() bool {
	return ch.CleanupPolicy != nil || ch.MinCompactionLagMs != nil || ch.MaxCompactionLagMs != nil ||
		ch.DeleteRetentionMs != nil || ch.MinCleanableDirtyRatio != nil
}

// Apply returns c with the change's set fields applied.
func (c TopicConfig) Apply(ch ConfigChange) TopicConfig {
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.RetentionMs, ch.RetentionMs)
	set(&c.RetentionBytes, ch.RetentionBytes)
	set(&c.RetentionRecords, ch.RetentionRecords)
	set(&c.SegmentBytes, ch.SegmentBytes)
	set(&c.SegmentMs, ch.SegmentMs)
	if ch.Cleanup != nil {
		c.Cleanup = *ch.Cleanup
	}
	if ch.setsCleanup() {
		c.Cleanup = c.Cleanups()
		if ch.CleanupPolicy != nil {
			// Kafka's spellings ("delete,compact", spaces) are one policy;
			// one that does not parse stays for Validate to name.
			c.Cleanup.Policy = *ch.CleanupPolicy
			if p, err := ParseCleanupPolicy(*ch.CleanupPolicy); err == nil {
				c.Cleanup.Policy = p
			}
		}
		set(&c.Cleanup.MinCompactionLagMs, ch.MinCompactionLagMs)
		set(&c.Cleanup.MaxCompactionLagMs, ch.MaxCompactionLagMs)
		set(&c.Cleanup.DeleteRetentionMs, ch.DeleteRetentionMs)
		if ch.MinCleanableDirtyRatio != nil {
			c.Cleanup.MinCleanableDirtyRatio = *ch.MinCleanableDirtyRatio
		}
	}
	return c.applyProduce(ch)
}

// applyProduce applies the change's produce settings.
func (c TopicConfig) applyProduce(ch ConfigChange) TopicConfig {
	if ch.Produce != nil {
		c.Produce = *ch.Produce
	}
	if ch.MaxMessageBytes != nil {
		c.Produce.MaxMessageBytes = *ch.MaxMessageBytes
	}
	if ch.TimestampType != nil {
		// One that does not parse stays for Validate to name.
		c.Produce.TimestampType = *ch.TimestampType
		if t, err := ParseTimestampType(*ch.TimestampType); err == nil {
			c.Produce.TimestampType = t
		}
	}
	if ch.MinInsyncReplicas != nil {
		c.Produce.MinInsyncReplicas = *ch.MinInsyncReplicas
	}
	return c
}

// Validate checks a config; errors wrap ErrInvalidConfig and say what to do.
func (c TopicConfig) Validate() error {
	if err := routing.ValidateTopicName(c.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		return fmt.Errorf("%w: partitions must be between 1 and %d, got %d", ErrInvalidConfig, MaxPartitions, c.Partitions)
	}
	if c.Replicas < 1 {
		return fmt.Errorf("%w: replicas must be at least 1, got %d", ErrInvalidConfig, c.Replicas)
	}
	limits := []struct {
		name string
		v    int64
	}{{"retention-time", c.RetentionMs}, {"retention-bytes", c.RetentionBytes}, {"retention-records", c.RetentionRecords}}
	for _, l := range limits {
		if l.v < -1 || l.v == 0 {
			return fmt.Errorf("%w: %s must be positive or -1 (unlimited), got %d", ErrInvalidConfig, l.name, l.v)
		}
	}
	if c.RetentionMs > MaxDurationMs {
		return fmt.Errorf("%w: retention-time must be at most %dms (about 292 years), got %dms: use -1 for unlimited", ErrInvalidConfig, MaxDurationMs, c.RetentionMs)
	}
	if c.SegmentBytes < MinSegmentBytes || c.SegmentBytes > 1<<31 {
		return fmt.Errorf("%w: segment-bytes must be between %d and %d, got %d", ErrInvalidConfig, MinSegmentBytes, int64(1)<<31, c.SegmentBytes)
	}
	if c.SegmentMs < 1000 || c.SegmentMs > MaxDurationMs {
		return fmt.Errorf("%w: segment age must be between 1s and %dms (about 292 years), got %dms", ErrInvalidConfig, MaxDurationMs, c.SegmentMs)
	}
	if err := c.Produces().Validate(); err != nil {
		return err
	}
	return c.Cleanups().Validate()
}

// Validate checks cleanup settings; errors wrap ErrInvalidConfig.
func (c CleanupConfig) Validate() error {
	if p, err := ParseCleanupPolicy(c.Policy); err != nil || p != c.Policy {
		return fmt.Errorf("%w: cleanup policy %q: want delete, compact or compact,delete", ErrInvalidConfig, c.Policy)
	}
	if c.MinCompactionLagMs < 0 || c.MinCompactionLagMs > MaxDurationMs {
		return fmt.Errorf("%w: min compaction lag must be between 0 and %dms, got %dms", ErrInvalidConfig, MaxDurationMs, c.MinCompactionLagMs)
	}
	if c.MaxCompactionLagMs < 1 {
		return fmt.Errorf("%w: max compaction lag must be at least 1ms, got %dms", ErrInvalidConfig, c.MaxCompactionLagMs)
	}
	if c.DeleteRetentionMs < 0 || c.DeleteRetentionMs > MaxDurationMs {
		return fmt.Errorf("%w: delete retention must be between 0 and %dms, got %dms", ErrInvalidConfig, MaxDurationMs, c.DeleteRetentionMs)
	}
	if !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1) {
		return fmt.Errorf("%w: min cleanable dirty ratio must be between 0 and 1, got %v", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	}
	return nil
}

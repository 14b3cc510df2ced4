package partition

import (
	"errors"
	"fmt"
	"math"
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
	return nil
}

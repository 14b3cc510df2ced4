package httpapi

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/logd/logd/broker"
)

// topicSetting is one topic config by its Kafka name: how a value is set in
// a change, and the config's value in a topic, as Kafka writes it. The
// names and values are the Kafka API's (kafka/topicconfigs.go), so a
// setting reads the same whichever front-end shows it.
type topicSetting struct {
	name  string
	set   func(ch *broker.ConfigChange, v string) error
	value func(c broker.TopicConfig) string
}

// defaultValue is the setting's value in a topic created without it.
func (s topicSetting) defaultValue() string { return s.value(broker.DefaultConfig("")) }

// topicSettings are the topic configs, in the order the answers list them.
// retention.records is logd's record-count retention (no Kafka
// equivalent).
var topicSettings = []topicSetting{
	longSetting("retention.ms", func(ch *broker.ConfigChange) **int64 { return &ch.RetentionMs }, func(c broker.TopicConfig) int64 { return c.RetentionMs }),
	longSetting("retention.bytes", func(ch *broker.ConfigChange) **int64 { return &ch.RetentionBytes }, func(c broker.TopicConfig) int64 { return c.RetentionBytes }),
	longSetting("retention.records", func(ch *broker.ConfigChange) **int64 { return &ch.RetentionRecords }, func(c broker.TopicConfig) int64 { return c.RetentionRecords }),
	longSetting("segment.bytes", func(ch *broker.ConfigChange) **int64 { return &ch.SegmentBytes }, func(c broker.TopicConfig) int64 { return c.SegmentBytes }),
	longSetting("segment.ms", func(ch *broker.ConfigChange) **int64 { return &ch.SegmentMs }, func(c broker.TopicConfig) int64 { return c.SegmentMs }),
	{
		name: "cleanup.policy",
		set: func(ch *broker.ConfigChange, v string) error {
			p, err := broker.ParseCleanupPolicy(v)
			if err != nil {
				return fmt.Errorf("%q: want delete, compact or compact,delete", v)
			}
			ch.CleanupPolicy = &p
			return nil
		},
		value: func(c broker.TopicConfig) string { return c.Cleanups().Policy },
	},
	longSetting("min.compaction.lag.ms", func(ch *broker.ConfigChange) **int64 { return &ch.MinCompactionLagMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().MinCompactionLagMs }),
	longSetting("max.compaction.lag.ms", func(ch *broker.ConfigChange) **int64 { return &ch.MaxCompactionLagMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().MaxCompactionLagMs }),
	longSetting("delete.retention.ms", func(ch *broker.ConfigChange) **int64 { return &ch.DeleteRetentionMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().DeleteRetentionMs }),
	{
		name: "min.cleanable.dirty.ratio",
		set: func(ch *broker.ConfigChange, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) {
				return fmt.Errorf("%q is not a number: give a ratio between 0 and 1, such as 0.5", v)
			}
			ch.MinCleanableDirtyRatio = &f
			return nil
		},
		value: func(c broker.TopicConfig) string {
			return strconv.FormatFloat(c.Cleanups().MinCleanableDirtyRatio, 'g', -1, 64)
		},
	},
	longSetting("max.message.bytes", func(ch *broker.ConfigChange) **int64 { return &ch.MaxMessageBytes }, func(c broker.TopicConfig) int64 { return c.Produces().MaxMessageBytes }),
	{
		name: "message.timestamp.type",
		set: func(ch *broker.ConfigChange, v string) error {
			t, err := broker.ParseTimestampType(v)
			if err != nil {
				return fmt.Errorf("%q: want CreateTime or LogAppendTime", v)
			}
			ch.TimestampType = &t
			return nil
		},
		value: func(c broker.TopicConfig) string { return c.Produces().TimestampType },
	},
	{
		name: "min.insync.replicas",
		set: func(ch *broker.ConfigChange, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			m := int32(n)
			ch.MinInsyncReplicas = &m
			return nil
		},
		value: func(c broker.TopicConfig) string { return strconv.Itoa(int(c.Produces().MinInsyncReplicas)) },
	},
	// compression.type: batches are stored as the producer compressed
	// them (Kafka's "producer"), the only value there is.
	{
		name: "compression.type",
		set: func(_ *broker.ConfigChange, v string) error {
			if strings.TrimSpace(v) != "producer" {
				return fmt.Errorf("%q: logd stores batches as the producer compressed them and has only compression.type=producer (set the codec on the producer)", v)
			}
			return nil
		},
		value: func(broker.TopicConfig) string { return "producer" },
	},
}

// longSetting is a topic config that is an integer field.
func longSetting(name string, field func(*broker.ConfigChange) **int64, value func(broker.TopicConfig) int64) topicSetting {
	return topicSetting{
		name: name,
		set: func(ch *broker.ConfigChange, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			*field(ch) = &n
			return nil
		},
		value: func(c broker.TopicConfig) string { return strconv.FormatInt(value(c), 10) },
	}
}

// topicSettingByName finds a setting by its Kafka name.
func topicSettingByName(name string) (topicSetting, bool) {
	for _, s := range topicSettings {
		if s.name == name {
			return s, true
		}
	}
	return topicSetting{}, false
}

// topicConfigs is a topic's settings by Kafka name, every one of them.
func topicConfigs(c broker.TopicConfig) map[string]string {
	m := make(map[string]string, len(topicSettings))
	for _, s := range topicSettings {
		m[s.name] = s.value(c)
	}
	return m
}

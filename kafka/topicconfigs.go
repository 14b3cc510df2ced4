package kafka

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// topicSetting is one topic config the Kafka API reads and writes, by Kafka
// name: how a value is parsed into a change, whether a change sets it, and
// the config's value in a topic's config, as Kafka writes it.
type topicSetting struct {
	name  string
	typ   kmsg.ConfigType
	parse func(ch *broker.ConfigChange, v string) error
	isSet func(ch broker.ConfigChange) bool
	value func(broker.TopicConfig) string
}

// topicConfigs are the topic configs logd has. retention.records is
// logd's record-count retention (no Kafka equivalent).
var topicConfigs = []topicSetting{
	longConfig("retention.ms", func(c *broker.ConfigChange) **int64 { return &c.RetentionMs }, func(c broker.TopicConfig) int64 { return c.RetentionMs }),
	longConfig("retention.bytes", func(c *broker.ConfigChange) **int64 { return &c.RetentionBytes }, func(c broker.TopicConfig) int64 { return c.RetentionBytes }),
	longConfig("retention.records", func(c *broker.ConfigChange) **int64 { return &c.RetentionRecords }, func(c broker.TopicConfig) int64 { return c.RetentionRecords }),
	longConfig("segment.bytes", func(c *broker.ConfigChange) **int64 { return &c.SegmentBytes }, func(c broker.TopicConfig) int64 { return c.SegmentBytes }),
	longConfig("segment.ms", func(c *broker.ConfigChange) **int64 { return &c.SegmentMs }, func(c broker.TopicConfig) int64 { return c.SegmentMs }),
	{
		name: "cleanup.policy", typ: kmsg.ConfigTypeList,
		parse: func(ch *broker.ConfigChange, v string) error {
			p, err := broker.ParseCleanupPolicy(v)
			ch.CleanupPolicy = &p
			return err
		},
		isSet: func(ch broker.ConfigChange) bool { return ch.CleanupPolicy != nil },
		value: func(c broker.TopicConfig) string { return c.Cleanups().Policy },
	},
	longConfig("min.compaction.lag.ms", func(c *broker.ConfigChange) **int64 { return &c.MinCompactionLagMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().MinCompactionLagMs }),
	longConfig("max.compaction.lag.ms", func(c *broker.ConfigChange) **int64 { return &c.MaxCompactionLagMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().MaxCompactionLagMs }),
	longConfig("delete.retention.ms", func(c *broker.ConfigChange) **int64 { return &c.DeleteRetentionMs }, func(c broker.TopicConfig) int64 { return c.Cleanups().DeleteRetentionMs }),
	{
		name: "min.cleanable.dirty.ratio", typ: kmsg.ConfigTypeDouble,
		parse: func(ch *broker.ConfigChange, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) {
				return fmt.Errorf("%w: min.cleanable.dirty.ratio: %q is not a number", errConfig, v)
			}
			ch.MinCleanableDirtyRatio = &f
			return nil
		},
		isSet: func(ch broker.ConfigChange) bool { return ch.MinCleanableDirtyRatio != nil },
		value: func(c broker.TopicConfig) string {
			return strconv.FormatFloat(c.Cleanups().MinCleanableDirtyRatio, 'g', -1, 64)
		},
	},
	longConfig("max.message.bytes", func(c *broker.ConfigChange) **int64 { return &c.MaxMessageBytes }, func(c broker.TopicConfig) int64 { return c.Produces().MaxMessageBytes }),
	{
		name: "message.timestamp.type", typ: kmsg.ConfigTypeString,
		parse: func(ch *broker.ConfigChange, v string) error {
			t, err := broker.ParseTimestampType(v)
			ch.TimestampType = &t
			return err
		},
		isSet: func(ch broker.ConfigChange) bool { return ch.TimestampType != nil },
		value: func(c broker.TopicConfig) string { return c.Produces().TimestampType },
	},
	{
		name: "min.insync.replicas", typ: kmsg.ConfigTypeInt,
		parse: func(ch *broker.ConfigChange, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fmt.Errorf("%w: min.insync.replicas: %q is not an integer", errConfig, v)
			}
			m := int32(n)
			ch.MinInsyncReplicas = &m
			return nil
		},
		isSet: func(ch broker.ConfigChange) bool { return ch.MinInsyncReplicas != nil },
		value: func(c broker.TopicConfig) string { return strconv.Itoa(int(c.Produces().MinInsyncReplicas)) },
	},
	// compression.type: logd stores batches as the producer compressed
	// them (Kafka's "producer"); recompressing to a topic's codec is not
	// done, so any other value is refused.
	{
		name: "compression.type", typ: kmsg.ConfigTypeString,
		parse: func(ch *broker.ConfigChange, v string) error {
			if strings.TrimSpace(v) != "producer" {
				return fmt.Errorf("%w: compression.type %q: logd stores batches as the producer compressed them and supports only compression.type=producer (set the codec on the producer)", errConfig, v)
			}
			return nil
		},
		isSet: func(ch broker.ConfigChange) bool { return false },
		value: func(c broker.TopicConfig) string { return "producer" },
	},
}

// longConfig is a topic config that is an integer field.
func longConfig(name string, field func(*broker.ConfigChange) **int64, value func(broker.TopicConfig) int64) topicSetting {
	return topicSetting{
		name: name, typ: kmsg.ConfigTypeLong,
		parse: func(ch *broker.ConfigChange, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %s: %q is not an integer", errConfig, name, v)
			}
			*field(ch) = &n
			return nil
		},
		isSet: func(ch broker.ConfigChange) bool { return *field(&ch) != nil },
		value: func(c broker.TopicConfig) string { return strconv.FormatInt(value(c), 10) },
	}
}

// supportedConfigs names the topic configs logd has, for errors.
var supportedConfigs = func() string {
	names := make([]string, len(topicConfigs))
	for i, tc := range topicConfigs {
		names[i] = tc.name
	}
	return strings.Join(names, ", ")
}()

// setConfig sets one topic config by its Kafka name in ch; a nil value is
// the config's default. An unknown name, or a value that does not parse,
// is an errConfig naming it.
func setConfig(ch *broker.ConfigChange, name string, value *string) error {
	for _, tc := range topicConfigs {
		if tc.name != name {
			continue
		}
		v := tc.value(broker.DefaultConfig(""))
		if value != nil {
			v = *value
		}
		return tc.parse(ch, v)
	}
	return fmt.Errorf("%w: config %s is not supported by logd (supported: %s)", errConfig, name, supportedConfigs)
}

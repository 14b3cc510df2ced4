package partition

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SettingKind is the type of a topic setting's value, as Kafka describes
// it (the Kafka API's DescribeConfigs answers it).
type SettingKind int

const (
	SettingLong SettingKind = iota
	SettingInt
	SettingDouble
	SettingString
	SettingList
)

// A Setting is one topic config by its Kafka name: how a value given as
// text is parsed into a ConfigChange, whether a change sets it, and its
// value in a topic's config as Kafka writes it. Every front-end that reads
// or writes topic configs by name (the Kafka API, HTTP) uses Settings, so
// a setting reads the same whichever one shows it.
type Setting struct {
	Name  string
	Kind  SettingKind
	parse func(ch *ConfigChange, v string) error
	isSet func(ch ConfigChange) bool
	value func(TopicConfig) string
}

// Parse sets v into ch. An error wraps ErrInvalidConfig, names the
// setting and says what to give.
func (s Setting) Parse(ch *ConfigChange, v string) error { return s.parse(ch, v) }

// IsSet reports whether ch sets s.
func (s Setting) IsSet(ch ConfigChange) bool { return s.isSet(ch) }

// Value is s's value in c.
func (s Setting) Value(c TopicConfig) string { return s.value(c) }

// Default is s's value in a topic created without it.
func (s Setting) Default() string { return s.value(DefaultConfig("")) }

// Settings are the topic configs, in the order answers list them.
// retention.records is logd's record-count retention (no Kafka
// equivalent).
var Settings = []Setting{
	longSetting("retention.ms", func(c *ConfigChange) **int64 { return &c.RetentionMs }, func(c TopicConfig) int64 { return c.RetentionMs }),
	longSetting("retention.bytes", func(c *ConfigChange) **int64 { return &c.RetentionBytes }, func(c TopicConfig) int64 { return c.RetentionBytes }),
	longSetting("retention.records", func(c *ConfigChange) **int64 { return &c.RetentionRecords }, func(c TopicConfig) int64 { return c.RetentionRecords }),
	longSetting("segment.bytes", func(c *ConfigChange) **int64 { return &c.SegmentBytes }, func(c TopicConfig) int64 { return c.SegmentBytes }),
	longSetting("segment.ms", func(c *ConfigChange) **int64 { return &c.SegmentMs }, func(c TopicConfig) int64 { return c.SegmentMs }),
	{
		Name: "cleanup.policy", Kind: SettingList,
		parse: func(ch *ConfigChange, v string) error {
			p, err := ParseCleanupPolicy(v)
			if err != nil {
				return err
			}
			ch.CleanupPolicy = &p
			return nil
		},
		isSet: func(ch ConfigChange) bool { return ch.CleanupPolicy != nil },
		value: func(c TopicConfig) string { return c.Cleanups().Policy },
	},
	longSetting("min.compaction.lag.ms", func(c *ConfigChange) **int64 { return &c.MinCompactionLagMs }, func(c TopicConfig) int64 { return c.Cleanups().MinCompactionLagMs }),
	longSetting("max.compaction.lag.ms", func(c *ConfigChange) **int64 { return &c.MaxCompactionLagMs }, func(c TopicConfig) int64 { return c.Cleanups().MaxCompactionLagMs }),
	longSetting("delete.retention.ms", func(c *ConfigChange) **int64 { return &c.DeleteRetentionMs }, func(c TopicConfig) int64 { return c.Cleanups().DeleteRetentionMs }),
	{
		Name: "min.cleanable.dirty.ratio", Kind: SettingDouble,
		parse: func(ch *ConfigChange, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) {
				return fmt.Errorf("%w: min.cleanable.dirty.ratio: %q is not a number: give a ratio between 0 and 1, such as 0.5", ErrInvalidConfig, v)
			}
			ch.MinCleanableDirtyRatio = &f
			return nil
		},
		isSet: func(ch ConfigChange) bool { return ch.MinCleanableDirtyRatio != nil },
		value: func(c TopicConfig) string {
			return strconv.FormatFloat(c.Cleanups().MinCleanableDirtyRatio, 'g', -1, 64)
		},
	},
	longSetting("max.message.bytes", func(c *ConfigChange) **int64 { return &c.MaxMessageBytes }, func(c TopicConfig) int64 { return c.Produces().MaxMessageBytes }),
	{
		Name: "message.timestamp.type", Kind: SettingString,
		parse: func(ch *ConfigChange, v string) error {
			t, err := ParseTimestampType(v)
			if err != nil {
				return err
			}
			ch.TimestampType = &t
			return nil
		},
		isSet: func(ch ConfigChange) bool { return ch.TimestampType != nil },
		value: func(c TopicConfig) string { return c.Produces().TimestampType },
	},
	{
		Name: "min.insync.replicas", Kind: SettingInt,
		parse: func(ch *ConfigChange, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fmt.Errorf("%w: min.insync.replicas: %q is not an integer", ErrInvalidConfig, v)
			}
			m := int32(n)
			ch.MinInsyncReplicas = &m
			return nil
		},
		isSet: func(ch ConfigChange) bool { return ch.MinInsyncReplicas != nil },
		value: func(c TopicConfig) string { return strconv.Itoa(int(c.Produces().MinInsyncReplicas)) },
	},
	// compression.type: batches are stored as the producer compressed
	// them (Kafka's "producer"); recompressing to a topic's codec is not
	// done, so any other value is refused.
	{
		Name: "compression.type", Kind: SettingString,
		parse: func(_ *ConfigChange, v string) error {
			if strings.TrimSpace(v) != "producer" {
				return fmt.Errorf("%w: compression.type %q: logd stores batches as the producer compressed them and has only compression.type=producer (set the codec on the producer)", ErrInvalidConfig, v)
			}
			return nil
		},
		isSet: func(ConfigChange) bool { return false },
		value: func(TopicConfig) string { return "producer" },
	},
}

// longSetting is a topic setting that is an integer field.
func longSetting(name string, field func(*ConfigChange) **int64, value func(TopicConfig) int64) Setting {
	return Setting{
		Name: name, Kind: SettingLong,
		parse: func(ch *ConfigChange, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %s: %q is not an integer", ErrInvalidConfig, name, v)
			}
			*field(ch) = &n
			return nil
		},
		isSet: func(ch ConfigChange) bool { return *field(&ch) != nil },
		value: func(c TopicConfig) string { return strconv.FormatInt(value(c), 10) },
	}
}

// SettingByName finds a topic setting by its Kafka name.
func SettingByName(name string) (Setting, bool) {
	for _, s := range Settings {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// SettingNames lists the topic settings' names, for errors.
var SettingNames = func() string {
	names := make([]string, len(Settings))
	for i, s := range Settings {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}()

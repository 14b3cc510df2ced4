package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// configType is the Kafka config type of a topic setting's kind.
func configType(k broker.TopicSettingKind) kmsg.ConfigType {
	switch k {
	case broker.SettingInt:
		return kmsg.ConfigTypeInt
	case broker.SettingDouble:
		return kmsg.ConfigTypeDouble
	case broker.SettingString:
		return kmsg.ConfigTypeString
	case broker.SettingList:
		return kmsg.ConfigTypeList
	default:
		return kmsg.ConfigTypeLong
	}
}

// setConfig sets one topic config by its Kafka name in ch; a nil value is
// the config's default. An unknown name is an errConfig naming it; a
// value that does not parse, the setting's own error (both answer
// INVALID_CONFIG).
func setConfig(ch *broker.ConfigChange, name string, value *string) error {
	s, ok := broker.TopicSettingByName(name)
	if !ok {
		return fmt.Errorf("%w: config %s is not supported by logd (supported: %s)", errConfig, name, broker.TopicSettingNames)
	}
	v := s.Default()
	if value != nil {
		v = *value
	}
	return s.Parse(ch, v)
}

package groups

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Subscription is a member's metadata for protocol type "consumer": the
// topics it reads and, for the cooperative protocol, the partitions it owns
// now. It is encoded with Kafka's consumer protocol (ConsumerMemberMetadata
// version 3), so a Kafka leader can read a logd member's subscription and the
// server-side assignors can read a Kafka member's.
type Subscription struct {
	Topics []string
	// Owned are the partitions the member holds from its last assignment.
	Owned []TopicPartition
	// Generation is the generation Owned comes from, -1 if unknown. When
	// two members claim a partition the higher generation keeps it.
	Generation int32
	UserData   []byte
}

// EncodeSubscription encodes s as Kafka's ConsumerMemberMetadata.
func EncodeSubscription(s Subscription) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 3
	m.Topics = s.Topics
	m.UserData = s.UserData
	m.Generation = s.Generation
	for _, t := range groupByTopic(s.Owned) {
		p := kmsg.NewConsumerMemberMetadataOwnedPartition()
		p.Topic, p.Partitions = t.topic, t.partitions
		m.OwnedPartitions = append(m.OwnedPartitions, p)
	}
	return m.AppendTo(nil)
}

// DecodeSubscription decodes a ConsumerMemberMetadata of any version.
func DecodeSubscription(b []byte) (Subscription, error) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return Subscription{}, fmt.Errorf("groups: decode consumer subscription (%d bytes): %w", len(b), err)
	}
	s := Subscription{Topics: m.Topics, UserData: m.UserData, Generation: m.Generation}
	if m.Version < 2 {
		s.Generation = -1
	}
	for _, t := range m.OwnedPartitions {
		for _, p := range t.Partitions {
			s.Owned = append(s.Owned, TopicPartition{t.Topic, p})
		}
	}
	return s, nil
}

// EncodeAssignment encodes a member's partitions as Kafka's
// ConsumerMemberAssignment.
func EncodeAssignment(tps []TopicPartition) []byte {
	m := kmsg.NewConsumerMemberAssignment()
	for _, t := range groupByTopic(tps) {
		a := kmsg.NewConsumerMemberAssignmentTopic()
		a.Topic, a.Partitions = t.topic, t.partitions
		m.Topics = append(m.Topics, a)
	}
	return m.AppendTo(nil)
}

// DecodeAssignment decodes a ConsumerMemberAssignment; an empty assignment
// (nil or zero bytes, what a member without partitions gets) decodes to nil.
func DecodeAssignment(b []byte) ([]TopicPartition, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m kmsg.ConsumerMemberAssignment
	if err := m.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("groups: decode consumer assignment (%d bytes): %w", len(b), err)
	}
	var tps []TopicPartition
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, TopicPartition{t.Topic, p})
		}
	}
	return tps, nil
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic sorts tps by topic and partition and groups them per topic,
// so an encoding does not depend on the order of the input.
func groupByTopic(tps []TopicPartition) []topicPartitions {
	sorted := append([]TopicPartition(nil), tps...)
	sortPartitions(sorted)
	var out []topicPartitions
	for _, tp := range sorted {
		if len(out) == 0 || out[len(out)-1].topic != tp.Topic {
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.partitions = append(last.partitions, tp.Partition)
	}
	return out
}

func sortPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool { return lessTP(tps[i], tps[j]) })
}

func lessTP(a, b TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

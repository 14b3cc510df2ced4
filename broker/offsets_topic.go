package broker

import (
	"errors"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// OffsetsTopic is the topic Kafka keeps committed offsets and groups in.
// logd keeps them in its cluster metadata, so no such topic is stored;
// while no topic of that name exists, a consumer group may still name
// it, as one may name Kafka's: it is a virtual topic of one partition,
// empty and read-only, with a fixed id (OffsetsTopicID). A KIP-848
// group resolves its members' names and regular expressions over it as
// over every topic (a Kafka coordinator resolves a regex over every
// topic, internal ones included), and offsets may be committed to it as
// to an empty partition (offset 0). The Kafka front-end lists and serves
// it (package kafka, offsets_topic.go); nothing else sees it. A topic a
// user creates under that name takes its place.
const OffsetsTopic = "__consumer_offsets"

// offsetsTopicConfig is the virtual topic's shape: one partition, never
// created (CreatedMs 0, so its id is the same on every node).
var offsetsTopicConfig = partition.TopicConfig{Name: OffsetsTopic, Partitions: 1}

// OffsetsTopicID is the virtual offsets topic's Kafka topic id.
func OffsetsTopicID() [16]byte { return TopicID(offsetsTopicConfig) }

// groupTopic is the config of a topic a consumer group names: the topic
// this node has, else the virtual offsets topic when that is the name.
// It is the one place the groups' lookups learn of the virtual topic.
func (b *Broker) groupTopic(name string) (partition.TopicConfig, error) {
	c, err := b.topics.Config(name)
	if isOffsetsTopic(name, err) {
		return offsetsTopicConfig, nil
	}
	return c, err
}

// isOffsetsTopic reports whether a lookup of name that failed with err
// names the virtual offsets topic: no topic of that name exists.
func isOffsetsTopic(name string, err error) bool {
	return name == OffsetsTopic && errors.Is(err, partition.ErrTopicNotFound)
}

// groupTopicNames is the names of the topics this node has and of the
// virtual offsets topic unless a topic has its name: what a group's
// regular expression is resolved over.
func (b *Broker) groupTopicNames() []string {
	var names []string
	created := false
	for _, c := range b.topics.List() {
		names = append(names, c.Name)
		created = created || c.Name == OffsetsTopic
	}
	if !created {
		names = append(names, OffsetsTopic)
	}
	return names
}

// commitToOffsetsTopic checks an offset committed to the virtual offsets
// topic as CommitOffsets checks any: its one partition, empty, has the
// high watermark 0.
func commitToOffsetsTopic(o offsets.Committed) error {
	if o.Partition != 0 {
		return partitionRange(OffsetsTopic, offsetsTopicConfig.Partitions, o.Partition)
	}
	if o.Offset > 0 {
		return kind.Errorf(kind.ErrInvalidArgument, "commit offsets: offset %d of %s/0 is beyond its high watermark 0", o.Offset, OffsetsTopic)
	}
	return nil
}

package broker

import (
	"context"

	"github.com/logd/logd/auth"
)

// EpochEnd answers Kafka's OffsetForLeaderEpoch on the leader of a
// partition: the end offset of leader epoch epoch in the committed log
// and the largest epoch at or below it that a batch holds (see
// log.Log.EpochEnd; a partition's leader epoch is its Raft term, which
// every batch holds). It needs describe on the topic; in a cluster a node
// that does not lead the partition answers a *NotLeaderError.
func (b *Broker) EpochEnd(ctx context.Context, pr Principal, topic string, part int32, epoch int32) (found int32, end int64, err error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(topic)); err != nil {
		return 0, 0, err
	}
	cfg, parts, err := b.topics.Partitions(topic)
	if err != nil {
		return 0, 0, b.topicLookup(ctx, topic, err)
	}
	if part < 0 || int(part) >= len(parts) {
		return 0, 0, partitionRange(topic, cfg.Partitions, part)
	}
	p := parts[part]
	if err := b.plane.mustLead(ctx, p); err != nil {
		return 0, 0, err
	}
	// Current first: a new leader's high watermark can be behind the
	// offsets its predecessor served until it commits in its own term,
	// and an end below a consumer's position reads as a truncated log
	// (the consumer goes back and reads again what it read).
	if err := b.plane.current(ctx, p); err != nil {
		return 0, 0, err
	}
	return p.Log.EpochEnd(epoch)
}

package broker

import (
	"context"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// DeleteRecords moves a partition's log start offset to offset (-1: the
// high watermark), as Kafka's DeleteRecords: records below it are never
// read again (a read there is an *OutOfRangeError, as below what retention
// deleted), and their bytes go when retention deletes their segments
// whole. It returns the log start now in force; an offset at or below it
// changes nothing. It needs delete on the topic. In a cluster it runs on
// the partition's leader (a *NotLeaderError elsewhere) and moves the start
// on every replica (a replicated entry); alone, in the partition's log. An
// offset above the high watermark is an *OutOfRangeError.
func (b *Broker) DeleteRecords(ctx context.Context, pr Principal, topic string, part int32, offset int64) (int64, error) {
	if err := b.Authorize(ctx, pr, auth.OpDelete, auth.Topic(topic)); err != nil {
		return 0, err
	}
	if offset < -1 {
		return 0, kind.Errorf(kind.ErrInvalidArgument, "delete records: offset %d (want an offset, or -1 for the high watermark)", offset)
	}
	if err := b.enter(); err != nil {
		return 0, err
	}
	defer b.leave()
	cfg, parts, err := b.topics.Partitions(topic)
	if err != nil {
		return 0, b.topicLookup(ctx, topic, err)
	}
	if part < 0 || int(part) >= len(parts) {
		return 0, partitionRange(topic, cfg.Partitions, part)
	}
	return b.plane.deleteRecords(ctx, parts[part], offset)
}

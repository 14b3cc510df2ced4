package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
)

// ErrGroupSubscribed refuses deleting a group's committed offset of a
// topic a member of the group reads now (Kafka's
// GROUP_SUBSCRIBED_TO_TOPIC). It is of the kind kind.ErrFailedPrecondition.
var ErrGroupSubscribed = fmt.Errorf("the group's members read the topic: %w", kind.ErrFailedPrecondition)

// DeleteOffsets deletes a group's committed offsets of the partitions
// parts names (their Offset ignored), as Kafka's OffsetDelete: delete on
// the group (else the whole request is refused), read on each topic. The
// answer has one error per part (nil: deleted, or there was none): a
// topic p may not read is refused, an unknown topic or partition is
// ErrUnknownTopic / ErrUnknownPartition, and a topic the group's members
// subscribe to or are assigned is ErrGroupSubscribed. A group with members
// whose protocol is not the consumer protocol is groups.ErrGroupNotEmpty;
// one the coordinator does not hold and with no committed offsets
// groups.ErrGroupNotFound. In a cluster it runs on the metadata leader;
// others answer *NotLeaderError (Untouched).
func (b *Broker) DeleteOffsets(ctx context.Context, pr Principal, group string, parts []offsets.Committed) ([]error, error) {
	if err := b.Authorize(ctx, pr, auth.OpDelete, auth.Group(group)); err != nil {
		return nil, err
	}
	if err := b.disk.checkRemedy(); err != nil {
		return nil, err
	}
	if err := b.currentMeta(ctx); err != nil {
		return nil, err
	}
	busy, err := b.subscribedTopics(group)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(parts))
	var del []offsets.Committed
	seen := map[string]error{}
	for i, c := range parts {
		errs[i] = b.deletableOffset(ctx, pr, c, busy, seen)
		if errs[i] == nil {
			del = append(del, offsets.Committed{Topic: c.Topic, Partition: c.Partition})
		}
	}
	if len(del) == 0 {
		return errs, nil
	}
	return errs, b.plane.deleteOffsets(ctx, group, del)
}

// subscribedTopics is the set of topics the group's members read now (nil
// for a group without members), or groups.ErrGroupNotEmpty for a group
// with members of another protocol, groups.ErrGroupNotFound for a group
// with neither members nor committed offsets.
func (b *Broker) subscribedTopics(group string) (map[string]bool, error) {
	coord, err := b.Coordinator()
	if err != nil {
		return nil, err
	}
	d, err := coord.Describe(group)
	if errors.Is(err, groups.ErrGroupNotFound) || err == nil && (d.State == groups.Dead || len(d.Members) == 0) {
		cs, ferr := b.offsets.Fetch(group, "")
		if ferr != nil {
			return nil, ferr
		}
		if len(cs) == 0 {
			return nil, fmt.Errorf("%w: %q has no members and no committed offsets", groups.ErrGroupNotFound, group)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if d.ProtocolType != groups.ConsumerProtocolType {
		return nil, fmt.Errorf("%w: %q has members of protocol type %q", groups.ErrGroupNotEmpty, group, d.ProtocolType)
	}
	busy := map[string]bool{}
	for _, m := range d.Members {
		if s, err := groups.DecodeSubscription(m.Metadata); err == nil {
			for _, t := range s.Topics {
				busy[t] = true
			}
		}
		for _, tp := range m.Partitions {
			busy[tp.Topic] = true
		}
	}
	return busy, nil
}

// deletableOffset is nil when c's offset may be deleted: p may read its
// topic (seen caches the answer by topic), which exists and has the
// partition, and no member of the group reads it.
func (b *Broker) deletableOffset(ctx context.Context, pr Principal, c offsets.Committed, busy map[string]bool, seen map[string]error) error {
	if err := b.authorizeRead(ctx, pr, c.Topic, seen); err != nil {
		return err
	}
	_, parts, err := b.topics.Partitions(c.Topic)
	if err != nil {
		return b.topicLookup(ctx, c.Topic, err)
	}
	if c.Partition < 0 || int(c.Partition) >= len(parts) {
		return fmt.Errorf("%w: %s/%d", ErrUnknownPartition, c.Topic, c.Partition)
	}
	if busy[c.Topic] {
		return fmt.Errorf("%w: %q", ErrGroupSubscribed, c.Topic)
	}
	return nil
}

func (l *localPlane) deleteOffsets(_ context.Context, group string, cs []offsets.Committed) error {
	return l.offsets.Delete(group, cs)
}

func (r *raftPlane) deleteOffsets(ctx context.Context, group string, cs []offsets.Committed) error {
	return r.cl.DeleteOffsets(ctx, group, cs)
}

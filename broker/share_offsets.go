package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/share"
)

// ShareOffset is a share partition's start offset (Kafka's SPSO) as
// DescribeShareGroupOffsets answers it: -1 when the group never used the
// partition, or Err for a partition that cannot be answered (unknown,
// denied, its leader unreachable).
type ShareOffset struct {
	SharePartition
	Start int64
	Err   error
}

// DescribeShareGroupOffsets answers each named partition's share-partition
// start offset (nil parts: every partition of the topics the group's
// members subscribe to or it used on this node). It needs describe on the
// group, and a partition describe on its topic; it is served on the group
// coordinator, and each partition's state is read where the partition is
// led (share_remote.go).
func (b *Broker) DescribeShareGroupOffsets(ctx context.Context, p Principal, group string, parts []SharePartition) ([]ShareOffset, error) {
	g, err := b.shareAdmin(ctx, p, auth.OpDescribe, group)
	if err != nil {
		return nil, err
	}
	defer b.leave()
	b.share.mu.Lock()
	if parts == nil {
		parts = b.shareGroupPartitionsLocked(g)
	}
	b.share.mu.Unlock()
	denied := map[string]error{}
	out := make([]ShareOffset, 0, len(parts))
	for _, ref := range parts {
		o := ShareOffset{SharePartition: ref, Start: -1}
		var ans sharePartAnswer
		if ans, o.Err = b.describeSharePart(ctx, p, g, ref, denied); ans.Stored {
			o.Start = ans.Desc.Start
		}
		out = append(out, o)
	}
	return out, nil
}

// shareGroupPartitionsLocked is every partition of the topics g's members
// subscribe to, subscribed to here, or g used here, in order. b.share.mu
// is held.
func (b *Broker) shareGroupPartitionsLocked(g *shareGroup) []SharePartition {
	topics := maps.Clone(g.topics)
	for _, m := range g.members {
		for _, t := range m.topics {
			topics[t] = true
		}
	}
	for ref := range g.parts {
		topics[ref.Topic] = true
	}
	var out []SharePartition
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		c, err := b.topics.Config(t)
		if err != nil {
			continue
		}
		for i := int32(0); i < c.Partitions; i++ {
			out = append(out, SharePartition{Topic: t, Partition: i})
		}
	}
	return out
}

// AlterShareGroupOffsets sets each named share partition's start offset
// (Kafka's AlterShareGroupOffsets): its state starts again there, every
// record from it on available with no delivery counted. The group must
// have no members (groups.ErrGroupNotEmpty); it needs read on the group,
// and a partition read on its topic; it is served on the group
// coordinator, each partition changed where it is led (share_remote.go).
// An offset above the high watermark is an *OutOfRangeError; one below the
// log start moves to the log start.
func (b *Broker) AlterShareGroupOffsets(ctx context.Context, p Principal, group string, offs []ShareOffset) ([]ShareOffset, error) {
	g, err := b.shareAdmin(ctx, p, auth.OpRead, group)
	if err != nil {
		return nil, err
	}
	defer b.leave()
	if err := b.shareGroupEmpty(g); err != nil {
		return nil, err
	}
	denied := map[string]error{}
	out := make([]ShareOffset, 0, len(offs))
	for _, o := range offs {
		if o.Err = b.authorizeRead(ctx, p, o.Topic, denied); o.Err == nil {
			_, o.Err = b.sharePart(ctx, p, g, sharePartReq{Group: group, Op: sharePartAlter, Topic: o.Topic, Partition: o.Partition, Offset: o.Start})
		}
		out = append(out, o)
	}
	return out, nil
}

// shareAdmin opens a share offsets admin call of group: op on the group
// authorized, served on the group coordinator, the node entered (the
// caller leaves it).
func (b *Broker) shareAdmin(ctx context.Context, p Principal, op auth.Operation, group string) (*shareGroup, error) {
	if err := b.Authorize(ctx, p, op, auth.Group(group)); err != nil {
		return nil, err
	}
	if err := b.CoordinatesGroups(); err != nil {
		return nil, err
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	b.share.mu.Lock()
	defer b.share.mu.Unlock()
	return b.shareGroupLocked(group), nil
}

// shareGroupEmpty refuses an offsets change of g while it has members
// (those whose sessions expired are let go first).
func (b *Broker) shareGroupEmpty(g *shareGroup) error {
	b.share.mu.Lock()
	gone := b.expireMembersLocked(g, time.Now())
	members := len(g.members)
	b.share.mu.Unlock()
	b.shareMembersLeft(g, gone)
	if members > 0 {
		return fmt.Errorf("share group %q has %d members: %w", g.name, members, groups.ErrGroupNotEmpty)
	}
	return nil
}

// ShareTopicResult is one topic's outcome of DeleteShareGroupOffsets.
type ShareTopicResult struct {
	Topic string
	Err   error
}

// DeleteShareGroupOffsets forgets the group's progress on every partition
// of each named topic (Kafka's DeleteShareGroupOffsets): each partition's
// state starts again where share.auto.offset.reset says, as at the
// group's first use, but from the time of the delete (Kafka starts it at
// the group's next use), keeping its dead-letter sequence. The group must
// have no members (groups.ErrGroupNotEmpty); it needs delete on the group
// and read on each topic; it is served on the group coordinator, each
// partition changed where it is led (share_remote.go); a topic's answer is
// its first partition's error.
func (b *Broker) DeleteShareGroupOffsets(ctx context.Context, p Principal, group string, topics []string) ([]ShareTopicResult, error) {
	g, err := b.shareAdmin(ctx, p, auth.OpDelete, group)
	if err != nil {
		return nil, err
	}
	defer b.leave()
	if err := b.shareGroupEmpty(g); err != nil {
		return nil, err
	}
	denied := map[string]error{}
	out := make([]ShareTopicResult, 0, len(topics))
	for _, topic := range topics {
		res := ShareTopicResult{Topic: topic, Err: b.authorizeRead(ctx, p, topic, denied)}
		if res.Err == nil {
			res.Err = b.shareForget(ctx, p, g, topic)
		}
		out = append(out, res)
	}
	return out, nil
}

// shareForget starts the state of each partition of topic again where the
// group's share.auto.offset.reset says, each where it is led.
func (b *Broker) shareForget(ctx context.Context, p Principal, g *shareGroup, topic string) error {
	c, err := b.topics.Config(topic)
	if err != nil {
		return b.topicLookup(ctx, topic, err)
	}
	for id := range c.Partitions {
		if _, err := b.sharePart(ctx, p, g, sharePartReq{Group: g.name, Op: sharePartForget, Topic: topic, Partition: id}); err != nil {
			return err
		}
	}
	return nil
}

// shareReset makes sp's state a new one starting at offset, durably.
func (b *Broker) shareReset(ctx context.Context, g *shareGroup, sp *sharePart, offset int64) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := b.shareCurrent(ctx, g, sp); err != nil {
		return err
	}
	l := sp.part.Log
	if start, hw := l.StartOffset(), l.HighWatermark(); offset < 0 || offset > hw {
		return &OutOfRangeError{Offset: offset, StartOffset: start, HighWatermark: hw}
	}
	// The dead-letter sequence goes on in the new state, so its pending
	// dead letters are appended first: a sequence reused for another
	// record would be taken for a retry and that record lost.
	b.shareDeadLetters(ctx, g, sp, time.Now().UnixMilli())
	if n := len(sp.p.DeadLetters()); n > 0 {
		return fmt.Errorf("share group %q, %s/%d: %d dead letters are not appended yet: retry", g.name, sp.ref.Topic, sp.ref.Partition, n)
	}
	cfg, gen := b.shareConfigOf(g)
	b.share.mu.Lock()
	jitter := b.share.jitter
	b.share.mu.Unlock()
	q := share.New(max(offset, l.StartOffset()), b.sharePartConfig(cfg))
	q.SetJitter(jitter)
	q.SetDeadLetterSequence(sp.p.DeadLetterSequence())
	if err := b.storeShare(ctx, g, sp, q); err != nil {
		return err
	}
	sp.cfgGen = gen
	sp.signal()
	return nil
}

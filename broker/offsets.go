package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

// CommitOffsets stores a group's offsets atomically and durably. Offsets
// must name existing partitions (or the virtual offsets topic's one,
// commitToOffsetsTopic); an offset beyond the high watermark is
// refused (it would skip records that do not exist yet). member and
// generation are the committer's in the group ("" and -1 from outside
// it), checked by the coordinator where there is one. In a cluster only
// the metadata leader stores: others answer *NotLeaderError (Untouched).
func (b *Broker) CommitOffsets(ctx context.Context, pr Principal, group, member string, generation int32, cs []offsets.Committed) error {
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Group(group)); err != nil {
		return err
	}
	for _, o := range cs {
		if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(o.Topic)); err != nil {
			return err
		}
	}
	if err := b.disk.checkMetadata(); err != nil {
		return err
	}
	if len(cs) == 0 {
		return kind.Errorf(kind.ErrInvalidArgument, "commit offsets: no offsets given")
	}
	for _, o := range cs {
		p, err := b.topics.Partition(o.Topic, o.Partition)
		if isOffsetsTopic(o.Topic, err) {
			if err := commitToOffsetsTopic(o); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return b.topicLookup(ctx, o.Topic, err)
		}
		// In a cluster only the leader knows the high watermark for sure (a
		// follower's may lag, and a new leader's until Leads proves it):
		// others leave the check to it. The high watermark is read again
		// after the proof.
		if o.Offset > p.Log.HighWatermark() && b.plane.leads(ctx, p) {
			if hw := p.Log.HighWatermark(); o.Offset > hw {
				return kind.Errorf(kind.ErrInvalidArgument, "commit offsets: offset %d of %s is beyond its high watermark %d", o.Offset, p.Name(), hw)
			}
		}
	}
	if err := b.coord.validateCommit(group, member, generation); err != nil {
		return err
	}
	return b.plane.commitOffsets(ctx, group, cs)
}

// FetchOffsets returns a group's committed offsets in topics (none: all).
// In a cluster they are read on the metadata leader, current; others
// answer *NotLeaderError (Untouched).
func (b *Broker) FetchOffsets(ctx context.Context, pr Principal, group string, topics []string) ([]offsets.Committed, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Group(group)); err != nil {
		return nil, err
	}
	for _, t := range topics {
		if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(t)); err != nil {
			return nil, err
		}
		if _, err := b.groupTopic(t); err != nil {
			return nil, b.topicLookup(ctx, t, err)
		}
	}
	if err := b.currentMeta(ctx); err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		all, err := b.offsets.Fetch(group, "")
		// Offsets of topics p may not describe are left out.
		return slices.DeleteFunc(all, func(c offsets.Committed) bool {
			return !b.allowed(pr, auth.OpDescribe, auth.Topic(c.Topic))
		}), err
	}
	var out []offsets.Committed
	for _, t := range topics {
		cs, err := b.offsets.Fetch(group, t)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// currentMeta makes a read of the metadata current: in a cluster, on the
// metadata leader after a read barrier; *NotLeaderError elsewhere.
func (b *Broker) currentMeta(ctx context.Context) error {
	return b.plane.currentMeta(ctx)
}

// ListGroups lists the groups that have committed offsets.
func (b *Broker) ListGroups(ctx context.Context, pr Principal) ([]string, error) {
	if err := b.currentMeta(ctx); err != nil {
		return nil, err
	}
	gs, err := b.offsets.Groups()
	// Groups p may not describe are left out.
	return slices.DeleteFunc(gs, func(g string) bool { return !b.allowed(pr, auth.OpDescribe, auth.Group(g)) }), err
}

// DeleteGroup deletes a consumer group, as Kafka's DeleteGroups: the
// coordinator forgets it and its committed offsets are deleted. A group
// with members is refused (groups.ErrGroupNotEmpty) and nothing is
// deleted; a group the coordinator does not hold and that has no committed
// offsets is groups.ErrGroupNotFound. In a cluster it runs on the metadata
// leader, which coordinates the groups; others answer *NotLeaderError
// (Untouched).
func (b *Broker) DeleteGroup(ctx context.Context, pr Principal, group string) error {
	if err := b.Authorize(ctx, pr, auth.OpDelete, auth.Group(group)); err != nil {
		return err
	}
	if err := b.disk.checkRemedy(); err != nil {
		return err
	}
	if err := b.currentMeta(ctx); err != nil {
		return err
	}
	coord, err := b.Coordinator()
	if err != nil {
		return err
	}
	held, err := b.consumers.deleteEmpty(group)
	if err != nil {
		return err
	}
	switch err := coord.DeleteGroup(group); {
	case err == nil:
		held = true
	case !errors.Is(err, groups.ErrGroupNotFound):
		return err
	}
	cs, err := b.offsets.Fetch(group, "")
	if err != nil {
		return err
	}
	if !held && len(cs) == 0 {
		return fmt.Errorf("%w: %q has no members and no committed offsets", groups.ErrGroupNotFound, group)
	}
	return b.plane.deleteGroupOffsets(ctx, group)
}

// GroupOffset is a committed offset with its partition's bounds and the
// group's lag there; Known is false when the bounds could not be had.
type GroupOffset struct {
	offsets.Committed
	Known                   bool
	LogStart, HighWatermark int64
	Lag                     int64
	Trimmed                 bool
}

// Lag adds each offset's partition bounds (its leader's, in a cluster)
// and the group's lag, and records the lag for the metrics.
func (b *Broker) Lag(ctx context.Context, group string, cs []offsets.Committed) []GroupOffset {
	out := make([]GroupOffset, len(cs))
	for i, c := range cs {
		out[i].Committed = c
		p, err := b.topics.Partition(c.Topic, c.Partition)
		if err != nil {
			continue
		}
		l, err := b.plane.partitionLog(ctx, p)
		if err != nil {
			continue // bounds unknown now: the offset alone
		}
		g := &out[i]
		g.Known, g.LogStart, g.HighWatermark = true, l.StartOffset(), l.HighWatermark()
		lag := b.lag.Observe(offsets.GroupPosition{Group: group, Topic: c.Topic, Partition: c.Partition,
			Committed: c.Offset, LogStart: g.LogStart, HighWatermark: g.HighWatermark})
		g.Lag, g.Trimmed = lag.Lag, lag.Trimmed
	}
	return out
}

// ResolveReset resolves a reset of a group's offsets in a topic (one
// partition, or all with nil) to earliest, latest, a time or an explicit
// offset, clamped to each log's bounds (as Kafka does). The caller
// commits them (CommitOffsets).
func (b *Broker) ResolveReset(ctx context.Context, pr Principal, topic string, part *int32, spec offsets.ResetSpec) ([]offsets.Committed, error) {
	// The commit that follows checks read on the group and the topic.
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(topic)); err != nil {
		return nil, err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return nil, err
	}
	cfg, parts, err := b.topics.Partitions(topic)
	if err != nil {
		return nil, b.topicLookup(ctx, topic, err)
	}
	targets := parts
	if part != nil {
		if *part < 0 || *part >= cfg.Partitions {
			return nil, partitionRange(topic, cfg.Partitions, *part)
		}
		targets = []*partition.Partition{parts[*part]}
	}
	now := time.Now()
	cs := make([]offsets.Committed, len(targets))
	err = eachPartition(ctx, len(targets), func(ctx context.Context, i int) (err error) {
		p := targets[i]
		l, err := b.plane.partitionLog(ctx, p)
		if err != nil {
			return err
		}
		r, err := spec.Resolve(now, l)
		cs[i] = offsets.Committed{Topic: p.Topic, Partition: p.ID, Offset: r.Offset}
		return err
	})
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// ResetOffsets moves group's offsets in topic (in one partition when part
// is set) to what spec resolves to on each partition's log, and commits
// them as a commit from outside the group would be (on the metadata
// leader: Forward passes it on there). It answers the offsets committed.
func (b *Broker) ResetOffsets(ctx context.Context, pr Principal, group, topic string, part *int32, spec offsets.ResetSpec) ([]offsets.Committed, error) {
	cs, err := b.ResolveReset(ctx, pr, topic, part, spec)
	if err != nil {
		return nil, err
	}
	if err := b.Forward().CommitOffsets(ctx, pr, group, "", -1, cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// groupPositions enumerates every committed offset with its partition's
// bounds, for the lag metrics at scrape time.
func (b *Broker) groupPositions() ([]offsets.GroupPosition, error) {
	groups, err := b.offsets.Groups()
	if err != nil {
		return nil, err
	}
	sort.Strings(groups)
	var out []offsets.GroupPosition
	for _, g := range groups {
		cs, err := b.offsets.Fetch(g, "")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			p, err := b.topics.Partition(c.Topic, c.Partition)
			if err != nil {
				continue
			}
			out = append(out, offsets.GroupPosition{Group: g, Topic: c.Topic, Partition: c.Partition,
				Committed: c.Offset, LogStart: p.Log.StartOffset(), HighWatermark: p.Log.HighWatermark()})
		}
	}
	return out, nil
}

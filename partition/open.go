package partition

import (
	"cmp"
	"context"
	"fmt"

	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/log"
)

// openParallel is how many partition logs Topics opens at once (a
// create, an add, a restart), and closes at once (Close). Opening a log is
// file system work, not CPU: make its directory, create or read its
// segment and index, fsync them and the directory. One after the other, a
// node took minutes to open 10,000; at once, the file system
// overlaps them (a journal commits concurrent fsyncs together, a device
// queues concurrent reads). The bound keeps the goroutines and the
// descriptors of opens in flight small beside a create's thousands of
// partitions, and a failing create stops after at most this many more
// opens. 16 gives ext4's journal enough concurrent fsyncs to batch, on a
// machine of any core count (the work does not need the cores).
const openParallel = 16

// partitionRef names a partition to open: its topic's config and its id.
type partitionRef struct {
	c  TopicConfig
	id int32
}

// refs names partitions from..to-1 of topic c.
func refs(c TopicConfig, from, to int32) []partitionRef {
	out := make([]partitionRef, 0, max(to-from, 0))
	for id := from; id < to; id++ {
		out = append(out, partitionRef{c, id})
	}
	return out
}

// openPartitions opens the partitions rs names, openParallel at a time,
// and returns them in rs's order. When one fails, it starts no more
// opens, closes every log it opened (so no partition is left open
// without an owner) and returns the error of the first that failed in
// rs's order, which names its partition, with how many others failed. It
// removes nothing: a failed create or add removes the directories itself
// (discardNew), a restart leaves its data in place.
func (t *Topics) openPartitions(rs []partitionRef) ([]*Partition, error) {
	ps := make([]*Partition, len(rs))
	errs := make([]error, len(rs))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fanout.Run(ctx, len(rs), openParallel, func(_ context.Context, i int) {
		if ps[i], errs[i] = t.openPartition(rs[i].c, rs[i].id); errs[i] != nil {
			cancel()
		}
	})
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if first == nil {
		return ps, nil
	}
	for _, p := range ps {
		if p != nil {
			p.Log.Close()
		}
	}
	if failed > 1 {
		return nil, fmt.Errorf("%w (and %d more partitions failed to open)", first, failed-1)
	}
	return nil, first
}

// openPartition opens one partition's log and rebuilds its producers'
// state from it.
func (t *Topics) openPartition(c TopicConfig, id int32) (*Partition, error) {
	dir := t.partitionDir(c.Name, id)
	l, err := log.Open(dir, t.opts.LogOptions(c))
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", c.Name, id, err)
	}
	if r := l.Recovery(); r.TruncatedBytes > 0 || r.RebuiltIndexes > 0 {
		t.opts.Logger.Warn("partition recovered", "partition", fmt.Sprintf("%s-%d", c.Name, id),
			"truncated_bytes", r.TruncatedBytes, "truncated_at", r.TruncatedAt, "rebuilt_indexes", r.RebuiltIndexes)
	}
	p := newPartition(c.Name, id, l)
	if err := p.recoverProducers(); err != nil {
		l.Close()
		return nil, err
	}
	return p, nil
}

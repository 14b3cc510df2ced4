package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
)

// The cleaner compacts the partitions of topics whose cleanup policy is
// compact (docs/compaction.md; the log's compact.go owns what is kept).
// It runs every retention interval and after a segment roll, one
// partition at a time, and compacts a partition whose dirty ratio has
// reached the topic's min.cleanable.dirty.ratio, whose oldest dirty
// segment is older than max.compaction.lag.ms, or which holds a tombstone
// past its delete horizon (delete.retention.ms after its segment was first
// cleaned; the log keeps that time, and its clean point, across restarts,
// so a restart does not clean a partition again). It touches only closed
// segments older than min.compaction.lag.ms, and in a replicated partition
// only below the bound retention deletes below (Replica.TrimLimit: what
// the latest Raft snapshot covers), so Raft never needs an entry it
// rewrote. It cleans only below the partition's last stable offset and
// tells the log which transactions were aborted (the partition's
// aborted-transaction index), whose records it removes (compact_txn.go in
// log). Each replica compacts its own log.

// Cleaner defaults.
const (
	// DefaultCleanerBytesPerSecond bounds the cleaner's disk I/O per node.
	DefaultCleanerBytesPerSecond = 64 << 20
	// DefaultCleanerMapEntries bounds the cleaner's key map (about 48 MiB).
	DefaultCleanerMapEntries = 1 << 20
)

// cleaner is the broker's compaction loop and its metrics.
type cleaner struct {
	// mu makes passes take turns: CleanNow waits for the loop's.
	mu        sync.Mutex
	kick      chan struct{}
	cleaned   *prometheus.CounterVec
	reclaimed *prometheus.CounterVec
	dirty     *prometheus.GaugeVec
	lag       *prometheus.GaugeVec
	// now, when set, is the cleaner's clock (tests); else time.Now.
	now atomic.Pointer[func() time.Time]
}

// clock is the time the cleaner measures lags and horizons from.
func (c *cleaner) clock() time.Time {
	if f := c.now.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

func newCleaner(reg *prometheus.Registry) *cleaner {
	c := &cleaner{
		kick: make(chan struct{}, 1),
		cleaned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "logd_cleaner_cleaned_bytes_total",
			Help: "Bytes the cleaner read compacting a topic's partitions."}, []string{"topic"}),
		reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "logd_cleaner_reclaimed_bytes_total",
			Help: "Bytes compaction removed from a topic's partitions."}, []string{"topic"}),
		dirty: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "logd_cleaner_dirty_ratio",
			Help: "Share of a compacted partition's cleanable bytes not yet cleaned."}, []string{"topic", "partition"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "logd_cleaner_lag_seconds",
			Help: "Age of the oldest record of a compacted partition not yet cleaned."}, []string{"topic", "partition"}),
	}
	reg.MustRegister(c.cleaned, c.reclaimed, c.dirty, c.lag)
	return c
}

// kickCleaner asks for a cleaner pass soon (after a roll).
func (b *Broker) kickCleaner() {
	select {
	case b.cleaner.kick <- struct{}{}:
	default:
	}
}

// runCleaner cleans every retention interval and when kicked, until ctx
// ends.
func (b *Broker) runCleaner(ctx context.Context) {
	t := time.NewTicker(b.cfg.RetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.cleaner.kick:
		}
		if _, err := b.clean(ctx, false); err != nil && ctx.Err() == nil {
			b.logger.Warn("compaction failed", "err", err)
		}
	}
}

// CleanNow compacts every compacted partition with a replica here that
// has anything cleanable, whatever its dirty ratio, and returns how many
// it rewrote segments of (tests, admin). It waits for a pass of the
// cleaner's loop under way, which may have done the work already.
func (b *Broker) CleanNow(ctx context.Context) (int, error) {
	return b.clean(ctx, true)
}

// clean runs one pass over the compacted partitions (all: ignore the
// dirty ratio and lag thresholds).
func (b *Broker) clean(ctx context.Context, all bool) (int, error) {
	type target struct {
		c partition.TopicConfig
		p *partition.Partition
	}
	b.cleaner.mu.Lock()
	defer b.cleaner.mu.Unlock()
	var ts []target
	b.topics.Each(func(c partition.TopicConfig, p *partition.Partition) {
		if c.Cleanups().Compacted() {
			ts = append(ts, target{c, p})
		}
	})
	n := 0
	var first error
	for _, t := range ts {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		did, err := b.cleanPartition(ctx, t.c, t.p, all)
		switch {
		case errors.Is(err, log.ErrClosed):
			// The topic was deleted meanwhile.
		case err != nil:
			// One partition's failure (a corrupt segment: reads report
			// it too) does not stop the others'.
			first = cmp.Or(first, fmt.Errorf("compact %s: %w", t.p.Name(), err))
		case did:
			n++
		}
	}
	return n, first
}

// cleanPartition compacts one partition if it is due (or all).
func (b *Broker) cleanPartition(ctx context.Context, c partition.TopicConfig, p *partition.Partition, all bool) (bool, error) {
	below, ok, err := b.compactBound(c, p)
	if err != nil || !ok {
		return false, err
	}
	// Only below the last stable offset: an open transaction's records
	// are neither mapped nor removed. The aborted spans are read after
	// it, so every transaction ended below it is in them or committed.
	below = min(below, p.LastStable())
	aborted := p.Aborted(p.Log.StartOffset(), below)
	spans := make([]log.AbortedSpan, len(aborted))
	for i, a := range aborted {
		spans[i] = log.AbortedSpan(a)
	}
	cl := c.Cleanups()
	opts := log.CompactOptions{
		Below:           below,
		Aborted:         spans,
		MinLag:          msDuration(cl.MinCompactionLagMs),
		DeleteRetention: msDuration(cl.DeleteRetentionMs),
		MapEntries:      b.cfg.CleanerMapEntries,
		BytesPerSecond:  b.cfg.CleanerBytesPerSecond,
		Now:             b.cleaner.clock(),
		Context:         ctx,
	}
	labels := []string{c.Name, strconv.Itoa(int(p.ID))}
	d := p.Log.Dirty(opts)
	b.cleaner.dirty.WithLabelValues(labels...).Set(d.Ratio())
	lag := 0.0
	if !d.OldestDirty.IsZero() {
		lag = opts.Now.Sub(d.OldestDirty).Seconds()
	}
	b.cleaner.lag.WithLabelValues(labels...).Set(lag)
	due := d.HorizonDue || d.DirtyBytes > 0 && (all || d.Ratio() >= cl.MinCleanableDirtyRatio ||
		time.Duration(lag*float64(time.Second)) > msDuration(cl.MaxCompactionLagMs))
	if !due {
		return false, nil
	}
	res, err := p.Log.Compact(opts)
	b.cleaner.cleaned.WithLabelValues(c.Name).Add(float64(res.Read))
	b.cleaner.reclaimed.WithLabelValues(c.Name).Add(float64(res.Reclaimed))
	b.cleaner.dirty.WithLabelValues(labels...).Set(p.Log.Dirty(opts).Ratio())
	return res.Segments > 0, err
}

// compactBound is the offset below which the cleaner may rewrite p's
// segments: its high watermark, and in a replicated partition the bound
// retention deletes below. ok is false when p has no replica here.
func (b *Broker) compactBound(c partition.TopicConfig, p *partition.Partition) (int64, bool, error) {
	l, ok := b.plane.retentionLog(c, p)
	if !ok {
		return 0, false, nil
	}
	below := p.Log.HighWatermark()
	if rt, ok := l.(raftTrimmed); ok {
		limit, err := rt.r.TrimLimit()
		if err != nil {
			return 0, false, err
		}
		below = min(below, limit)
	}
	return below, true, nil
}

// msDuration is a config's ms as a Duration, the longest for a larger
// value (Kafka's 2^63-1 for "never").
func msDuration(ms int64) time.Duration {
	if ms >= math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

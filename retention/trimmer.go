package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/log"
)

// DefaultInterval is how often Run trims when Options.Interval is 0 (the
// serve flag --retention-interval defaults to the same).
const DefaultInterval = 30 * time.Second

// Log is what the Trimmer needs of a partition's log; *log.Log satisfies it.
type Log interface {
	// Segments lists the segments, oldest first, the last one active.
	Segments() []log.SegmentInfo
	// DeleteSegmentsBefore deletes whole closed segments whose records all
	// lie below offset, never the active one, advances the log start and
	// returns what it deleted.
	DeleteSegmentsBefore(offset int64) ([]log.SegmentInfo, error)
	// A Log that also has StartOffset() int64 (*log.Log does) has its
	// closed segments wholly below its start deleted too (ByLogStart).
}

// Target is one partition to trim, with the policy in force now.
type Target struct {
	Topic     string
	Partition int32
	Policy    Policy
	Log       Log
}

// Options configure a Trimmer.
type Options struct {
	// Targets returns the partitions to trim with their current policies.
	// It is called at every trim, so policy changes apply at the next one.
	Targets func() ([]Target, error)
	// Interval between periodic trims; 0 means DefaultInterval.
	Interval time.Duration
	// Now is the clock retention time is measured against; nil: time.Now.
	Now func() time.Time
	// Logger receives one line per partition trimmed and per failure; nil:
	// slog.Default().
	Logger *slog.Logger
}

// Result sums what one trim deleted.
type Result struct {
	Segments, Bytes, Records int64
}

// Trimmer deletes what retention policies no longer need. Create it with
// NewTrimmer, start Run in a goroutine, register it with Prometheus.
type Trimmer struct {
	targets  func() ([]Target, error)
	interval time.Duration
	now      func() time.Time
	logger   *slog.Logger

	trimMu sync.Mutex    // one trim at a time
	kick   chan struct{} // capacity 1: pending kicks coalesce

	segments, bytes, records *prometheus.CounterVec
}

// NewTrimmer returns a Trimmer; it does nothing until Run, Kick or TrimNow.
func NewTrimmer(opts Options) *Trimmer {
	t := &Trimmer{
		targets:  opts.Targets,
		interval: opts.Interval,
		now:      opts.Now,
		logger:   opts.Logger,
		kick:     make(chan struct{}, 1),
		segments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_retention_deleted_segments_total",
			Help: "Segments deleted by retention.",
		}, []string{"topic"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_retention_deleted_bytes_total",
			Help: "Bytes of segments deleted by retention.",
		}, []string{"topic"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_retention_deleted_records_total",
			Help: "Records (offsets) in segments deleted by retention.",
		}, []string{"topic"}),
	}
	if t.interval <= 0 {
		t.interval = DefaultInterval
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.logger == nil {
		t.logger = slog.Default()
	}
	return t
}

// Run trims at once, then every interval and at every Kick, until ctx ends.
// It returns nil when ctx ends; a failing partition is logged and retried at
// the next trim, it does not stop Run.
func (t *Trimmer) Run(ctx context.Context) error {
	ticker := time.NewTicker(t.interval)
	defer ticker.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		t.trim(ctx) // failures are logged by trim
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-t.kick:
		}
	}
}

// Kick asks Run for a trim soon (after a segment roll). It never blocks;
// kicks made while one is pending coalesce into one trim.
func (t *Trimmer) Kick() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// TrimNow trims every target once and returns what it deleted. The error
// joins the failures of single partitions; the others are trimmed anyway.
func (t *Trimmer) TrimNow() (Result, error) {
	return t.trim(context.Background())
}

func (t *Trimmer) trim(ctx context.Context) (Result, error) {
	t.trimMu.Lock()
	defer t.trimMu.Unlock()
	targets, err := t.targets()
	if err != nil {
		t.logger.Warn("retention: cannot list partitions", "err", err)
		return Result{}, fmt.Errorf("retention: list partitions: %w", err)
	}
	var total Result
	var errs []error
	for _, tg := range targets {
		if ctx.Err() != nil {
			break
		}
		r, err := t.trimOne(tg)
		total.Segments += r.Segments
		total.Bytes += r.Bytes
		total.Records += r.Records
		if err != nil {
			t.logger.Warn("retention: trim failed", "topic", tg.Topic, "partition", tg.Partition, "err", err)
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// trimOne applies the policy to one partition. The segments are read, then
// deleted below the decided offset; a segment appended or rolled in between
// lies above that offset, so it cannot be deleted by mistake.
func (t *Trimmer) trimOne(tg Target) (Result, error) {
	if tg.Log == nil {
		return Result{}, nil // a partition still opening or already closed
	}
	start := int64(-1)
	if s, ok := tg.Log.(interface{ StartOffset() int64 }); ok {
		start = s.StartOffset()
	}
	d := DecideWithStart(tg.Log.Segments(), start, t.now(), tg.Policy)
	if d.Segments == 0 {
		return Result{}, nil
	}
	deleted, err := tg.Log.DeleteSegmentsBefore(d.Before)
	var r Result
	for _, s := range deleted {
		r.Segments++
		r.Bytes += s.Size
		r.Records += s.NextOffset - s.BaseOffset
	}
	if r.Segments > 0 {
		t.segments.WithLabelValues(tg.Topic).Add(float64(r.Segments))
		t.bytes.WithLabelValues(tg.Topic).Add(float64(r.Bytes))
		t.records.WithLabelValues(tg.Topic).Add(float64(r.Records))
		t.logger.Info("retention: deleted segments",
			"topic", tg.Topic, "partition", tg.Partition, "reason", d.Reason.String(),
			"segments", r.Segments, "bytes", r.Bytes, "records", r.Records,
			"first_base_offset", deleted[0].BaseOffset, "log_start", deleted[len(deleted)-1].NextOffset)
	}
	if err != nil {
		return r, fmt.Errorf("retention: %s/%d: delete segments before %d: %w", tg.Topic, tg.Partition, d.Before, err)
	}
	return r, nil
}

// Describe implements prometheus.Collector.
func (t *Trimmer) Describe(ch chan<- *prometheus.Desc) {
	t.segments.Describe(ch)
	t.bytes.Describe(ch)
	t.records.Describe(ch)
}

// Collect implements prometheus.Collector.
func (t *Trimmer) Collect(ch chan<- prometheus.Metric) {
	t.segments.Collect(ch)
	t.bytes.Collect(ch)
	t.records.Collect(ch)
}

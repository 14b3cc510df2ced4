package offsets

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupPosition is one group's committed offset in one partition with the
// partition's bounds, as the server sees them at scrape time.
type GroupPosition struct {
	Group         string
	Topic         string
	Partition     int32
	Committed     int64
	LogStart      int64
	HighWatermark int64
}

// LagCollector exports, computed at scrape time from the positions a
// function enumerates:
//
//	logd_consumer_group_lag{group,topic,partition}                  gauge, Lag(...).Lag
//	logd_consumer_group_trimmed_records_total{group,topic,partition} counter
//
// The counter counts records retention removed before the group consumed
// them. Each offset counts once per (group, topic, partition) while the
// collector lives: it remembers the highest offset already counted as lost,
// so a log start that keeps moving past a stuck group adds only the newly
// lost records, and a group that later resumes is not counted again. Loss
// that begins and ends between two scrapes is seen only if the server also
// reports it through Observe (for example when a fetch resumes a trimmed
// group at the log start). Like every Prometheus counter it restarts from 0
// with the process.
type LagCollector struct {
	positions func() ([]GroupPosition, error)
	lag       *prometheus.Desc
	trimmed   *prometheus.Desc

	mu sync.Mutex
	// lostThrough is, per partition of a group, the end of the offsets
	// already counted as lost; lost is their count.
	lostThrough map[positionKey]int64
	lost        map[positionKey]int64
}

type positionKey struct {
	group, topic string
	partition    int32
}

// NewLagCollector returns a collector fed by positions, which is called once
// per scrape. Register it with a prometheus.Registerer.
func NewLagCollector(positions func() ([]GroupPosition, error)) *LagCollector {
	labels := []string{"group", "topic", "partition"}
	return &LagCollector{
		positions: positions,
		lag: prometheus.NewDesc("logd_consumer_group_lag",
			"Records between a consumer group's committed offset and the high watermark of a partition.", labels, nil),
		trimmed: prometheus.NewDesc("logd_consumer_group_trimmed_records_total",
			"Records retention deleted before the consumer group consumed them.", labels, nil),
		lostThrough: make(map[positionKey]int64),
		lost:        make(map[positionKey]int64),
	}
}

// Describe implements prometheus.Collector.
func (c *LagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.trimmed
}

// Collect implements prometheus.Collector.
func (c *LagCollector) Collect(ch chan<- prometheus.Metric) {
	ps, err := c.positions()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lag, err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	live := make(map[positionKey]bool, len(ps))
	for _, p := range ps {
		k := positionKey{p.Group, p.Topic, p.Partition}
		live[k] = true
		info := c.observeLocked(k, p)
		labels := []string{p.Group, p.Topic, strconv.Itoa(int(p.Partition))}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(info.Lag), labels...)
		ch <- prometheus.MustNewConstMetric(c.trimmed, prometheus.CounterValue, float64(c.lost[k]), labels...)
	}
	// Forget partitions no longer enumerated (group or topic deleted).
	for k := range c.lost {
		if !live[k] {
			delete(c.lost, k)
			delete(c.lostThrough, k)
		}
	}
}

// Observe accounts for a position outside a scrape and returns its lag.
func (c *LagCollector) Observe(p GroupPosition) LagInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observeLocked(positionKey{p.Group, p.Topic, p.Partition}, p)
}

func (c *LagCollector) observeLocked(k positionKey, p GroupPosition) LagInfo {
	info := Lag(p.Committed, p.LogStart, p.HighWatermark)
	if _, ok := c.lost[k]; !ok {
		c.lost[k] = 0
	}
	if info.Trimmed {
		from := max(p.Committed, c.lostThrough[k])
		if p.LogStart > from {
			c.lost[k] += p.LogStart - from
			c.lostThrough[k] = p.LogStart
		}
	}
	return info
}

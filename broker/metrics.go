package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/logd/logd/internal/buildinfo"
	"github.com/logd/logd/partition"
)

// metrics are a node's Prometheus collectors, on a registry of the node's
// own (several nodes can run in one test process).
type metrics struct {
	reg *prometheus.Registry
	// counts holds the record counters alone, for recordCounts.
	counts *prometheus.Registry

	produceRecords   *prometheus.CounterVec
	produceBytes     *prometheus.CounterVec
	produceDupes     *prometheus.CounterVec
	produceLatency   prometheus.Histogram
	fetchRecords     *prometheus.CounterVec
	fetchBytes       *prometheus.CounterVec
	fsyncLatency     prometheus.Histogram
	diskWrittenBytes prometheus.Counter
}

var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics(reg *prometheus.Registry, topics func() *partition.Topics) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		reg: reg,
		produceRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_produce_records_total", Help: "Records appended, by topic."}, []string{"topic"}),
		produceBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_produce_bytes_total", Help: "Batch bytes appended, by topic."}, []string{"topic"}),
		produceDupes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_produce_duplicate_batches_total", Help: "Retried batches recognised as already appended (idempotent producer)."}, []string{"topic"}),
		produceLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "logd_produce_latency_seconds", Help: "Time from receiving a batch to acknowledging it (durable).", Buckets: latencyBuckets}),
		fetchRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_fetch_records_total", Help: "Records returned to consumers, by topic."}, []string{"topic"}),
		fetchBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_fetch_bytes_total", Help: "Batch bytes returned to consumers, by topic."}, []string{"topic"}),
		fsyncLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "logd_fsync_duration_seconds", Help: "Duration of each fsync of a segment.", Buckets: latencyBuckets}),
		diskWrittenBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "logd_disk_written_bytes_total", Help: "Bytes written to disk by the logs (segments and indexes)."}),
	}
	m.reg.MustRegister(m.produceRecords, m.produceBytes, m.produceDupes, m.produceLatency,
		m.fetchRecords, m.fetchBytes, m.fsyncLatency, m.diskWrittenBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&partitionCollector{topics: topics}, buildInfoGauge())
	m.counts = prometheus.NewRegistry()
	m.counts.MustRegister(m.produceRecords, m.fetchRecords)
	return m
}

// buildInfoGauge is logd_build_info: 1, labelled with what `logd version`
// prints, so a dashboard can tell which build each node runs.
func buildInfoGauge() prometheus.Gauge {
	in := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "logd_build_info", Help: "1, labelled with the build's module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": in.Revision, "goversion": in.GoVersion},
	})
	g.Set(1)
	return g
}

// partitionCollector reports per-partition gauges at scrape time.
type partitionCollector struct {
	topics func() *partition.Topics
}

var (
	descLogStart = prometheus.NewDesc("logd_partition_log_start_offset", "First offset still stored.", []string{"topic", "partition"}, nil)
	descHW       = prometheus.NewDesc("logd_partition_high_watermark", "Offset below which records are readable.", []string{"topic", "partition"}, nil)
	descSize     = prometheus.NewDesc("logd_partition_size_bytes", "Bytes on disk of the partition's segments.", []string{"topic", "partition"}, nil)
	descSegments = prometheus.NewDesc("logd_partition_segments", "Segment files of the partition.", []string{"topic", "partition"}, nil)
)

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLogStart
	ch <- descHW
	ch <- descSize
	ch <- descSegments
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.topics()
	if t == nil {
		return
	}
	t.Each(func(_ partition.TopicConfig, p *partition.Partition) {
		labels := []string{p.Topic, strconv.Itoa(int(p.ID))}
		ch <- prometheus.MustNewConstMetric(descLogStart, prometheus.GaugeValue, float64(p.Log.StartOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(descHW, prometheus.GaugeValue, float64(p.Log.HighWatermark()), labels...)
		ch <- prometheus.MustNewConstMetric(descSize, prometheus.GaugeValue, float64(p.Log.Size()), labels...)
		ch <- prometheus.MustNewConstMetric(descSegments, prometheus.GaugeValue, float64(len(p.Log.Segments())), labels...)
	})
}

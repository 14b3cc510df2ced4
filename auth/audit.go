package auth

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DenialAudit records refused requests: every one in the counter
// logd_authz_denied_total{operation,resource_type}, and one log line each
// while under the rate limit. Past it, lines are dropped and the next line
// that gets through says how many were (suppressed), so a client hammering
// a forbidden topic cannot flood the log or slow the node with logging.
// It is a prometheus.Collector: the server registers it on its registry.
type DenialAudit struct {
	log    *slog.Logger
	denied *prometheus.CounterVec

	mu         sync.Mutex
	rate       float64 // lines per second
	burst      float64
	tokens     float64
	last       time.Time
	suppressed int
	now        func() time.Time
}

// NewDenialAudit logs at most perSecond denials a second on average, and
// burst at once. perSecond <= 0 means 10, burst <= 0 means 20, a nil log
// slog's default.
func NewDenialAudit(log *slog.Logger, perSecond float64, burst int) *DenialAudit {
	if perSecond <= 0 {
		perSecond = 10
	}
	if burst <= 0 {
		burst = 20
	}
	if log == nil {
		log = slog.Default()
	}
	return &DenialAudit{
		log: log,
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_authz_denied_total",
			Help: "Requests refused by authorization, by operation and resource type.",
		}, []string{"operation", "resource_type"}),
		rate: perSecond, burst: float64(burst), tokens: float64(burst), now: time.Now,
	}
}

func (d *DenialAudit) Describe(ch chan<- *prometheus.Desc) { d.denied.Describe(ch) }
func (d *DenialAudit) Collect(ch chan<- prometheus.Metric) { d.denied.Collect(ch) }

func (d *DenialAudit) record(id Identity, op Operation, r Resource, why Decision) {
	d.denied.WithLabelValues(op.String(), r.Type.String()).Inc()
	suppressed, ok := d.take()
	if !ok {
		return
	}
	attrs := []any{
		"principal", id.Principal.String(), "operation", op.String(),
		"resource_type", r.Type.String(), "resource", r.Name, "source", id.Addr, "reason", why.String(),
	}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	d.log.Warn("request denied", attrs...)
}

// take spends a token of the bucket; ok is false when none is left. It
// returns (and resets) the number of denials not logged since the last
// line.
func (d *DenialAudit) take() (suppressed int, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if !d.last.IsZero() {
		d.tokens = min(d.burst, d.tokens+now.Sub(d.last).Seconds()*d.rate)
	}
	d.last = now
	if d.tokens < 1 {
		d.suppressed++
		return 0, false
	}
	d.tokens--
	suppressed, d.suppressed = d.suppressed, 0
	return suppressed, true
}

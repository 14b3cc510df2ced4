package server

import "github.com/prometheus/client_golang/prometheus"

// metrics are the gRPC front-end's collectors, on the node's registry
// (the broker's are there too).
type metrics struct {
	produceErrors   *prometheus.CounterVec
	slowSubscribers prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "logd_produce_errors_total", Help: "Failed produce requests, by gRPC code."}, []string{"code"}),
		slowSubscribers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "logd_subscriptions_ended_slow_total",
			Help: "Subscribe streams ended because their client left a message unread for --send-timeout."}),
	}
	reg.MustRegister(m.produceErrors, m.slowSubscribers)
	return m
}

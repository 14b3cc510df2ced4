package groups

import "github.com/prometheus/client_golang/prometheus"

// Collector returns a prometheus.Collector that reads the coordinator at
// scrape time (nothing is counted on the hot path):
//
//	logd_group_members{group}                 gauge, members now
//	logd_group_generation{group}              gauge, the current generation
//	logd_group_rebalances_total{group}        counter, rebalances started
//	logd_group_state{group,state}             gauge, 1 for the current state
//
// Series of a deleted group disappear; its counter restarts from 0 if the
// group comes back, and with the process, like every Prometheus counter.
// Lag per member is computed by the core from offsets and assignments.
func (c *Coordinator) Collector() prometheus.Collector {
	return &collector{
		c:          c,
		members:    prometheus.NewDesc("logd_group_members", "Members of the consumer group.", []string{"group"}, nil),
		generation: prometheus.NewDesc("logd_group_generation", "Current generation of the consumer group.", []string{"group"}, nil),
		rebalances: prometheus.NewDesc("logd_group_rebalances_total", "Rebalances the consumer group started on this coordinator.", []string{"group"}, nil),
		state:      prometheus.NewDesc("logd_group_state", "State of the consumer group (1 for the current one).", []string{"group", "state"}, nil),
	}
}

type collector struct {
	c                                      *Coordinator
	members, generation, rebalances, state *prometheus.Desc
}

func (m *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.members
	ch <- m.generation
	ch <- m.rebalances
	ch <- m.state
}

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	type snapshot struct {
		name                string
		members, generation int
		rebalances          uint64
		state               State
	}
	m.c.mu.Lock()
	snaps := make([]snapshot, 0, len(m.c.groups))
	for _, g := range m.c.groups {
		snaps = append(snaps, snapshot{g.name, len(g.members), int(g.generation), g.rebalances, g.state})
	}
	m.c.mu.Unlock()
	for _, s := range snaps {
		ch <- prometheus.MustNewConstMetric(m.members, prometheus.GaugeValue, float64(s.members), s.name)
		ch <- prometheus.MustNewConstMetric(m.generation, prometheus.GaugeValue, float64(s.generation), s.name)
		ch <- prometheus.MustNewConstMetric(m.rebalances, prometheus.CounterValue, float64(s.rebalances), s.name)
		ch <- prometheus.MustNewConstMetric(m.state, prometheus.GaugeValue, 1, s.name, s.state.String())
	}
}

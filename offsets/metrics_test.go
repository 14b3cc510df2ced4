package offsets

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape gathers reg into "name{group/topic/partition}" -> value.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[fmt.Sprintf("%s{%s/%s/%s}", mf.GetName(), l["group"], l["topic"], l["partition"])] = v
		}
	}
	return out
}

const (
	lag0     = "logd_consumer_group_lag{g/t/0}"
	lag1     = "logd_consumer_group_lag{g/t/1}"
	trimmed0 = "logd_consumer_group_trimmed_records_total{g/t/0}"
	trimmed1 = "logd_consumer_group_trimmed_records_total{g/t/1}"
)

func TestLagCollector(t *testing.T) {
	ps := []GroupPosition{
		{Group: "g", Topic: "t", Partition: 0, Committed: 40, LogStart: 0, HighWatermark: 100},
		{Group: "g", Topic: "t", Partition: 1, Committed: 10, LogStart: 50, HighWatermark: 80},
	}
	c := NewLagCollector(func() ([]GroupPosition, error) { return ps, nil })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	expect := func(step string, want map[string]float64) {
		t.Helper()
		if got := scrape(t, reg); !maps.Equal(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", step, got, want)
		}
	}

	expect("first scrape", map[string]float64{lag0: 60, lag1: 70, trimmed0: 0, trimmed1: 40})
	// Same state scraped again: the loss is not counted twice.
	expect("second scrape", map[string]float64{lag0: 60, lag1: 70, trimmed0: 0, trimmed1: 40})
	// Retention moves on past the stuck group: only the new loss counts.
	// Partition 0 consumed before retention trimmed below it: no loss.
	ps[1].LogStart, ps[1].HighWatermark = 60, 90
	ps[0].Committed, ps[0].LogStart = 100, 90
	expect("log start moved", map[string]float64{lag0: 0, lag1: 80, trimmed0: 0, trimmed1: 50})
	// The group resumes at the log start and commits beyond it.
	ps[1].Committed = 70
	expect("resumed", map[string]float64{lag0: 0, lag1: 20, trimmed0: 0, trimmed1: 50})
	// Reset back to a trimmed offset: records already counted do not count
	// again; only [60, 65) is new.
	ps[1].Committed, ps[1].LogStart = 0, 65
	expect("reset to 0", map[string]float64{lag0: 0, lag1: 90, trimmed0: 0, trimmed1: 55})
	// A partition no longer enumerated disappears.
	ps = ps[:1]
	expect("partition gone", map[string]float64{lag0: 0, trimmed0: 0})
}

// A loss that starts and ends between scrapes is counted when the server
// reports it through Observe.
func TestLagCollectorObserve(t *testing.T) {
	var ps []GroupPosition
	c := NewLagCollector(func() ([]GroupPosition, error) { return ps, nil })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	info := c.Observe(GroupPosition{Group: "g", Topic: "t", Partition: 0, Committed: 5, LogStart: 30, HighWatermark: 40})
	if !info.Trimmed || info.Lost != 25 || info.ResumeAt != 30 {
		t.Fatalf("observe = %+v", info)
	}
	ps = []GroupPosition{{Group: "g", Topic: "t", Partition: 0, Committed: 35, LogStart: 30, HighWatermark: 40}}
	if got := scrape(t, reg); got[trimmed0] != 25 || got[lag0] != 5 {
		t.Fatalf("scrape after observe = %v, want trimmed 25, lag 5", got)
	}
}

func TestLagCollectorError(t *testing.T) {
	c := NewLagCollector(func() ([]GroupPosition, error) { return nil, errors.New("pebble closed") })
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "pebble closed") {
		t.Fatalf("gather error = %v, want the enumeration error", err)
	}
}

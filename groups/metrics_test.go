package groups

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, lp := range m.GetLabel() {
				key += "/" + lp.GetValue()
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[key] = v
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	h := newHarness(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.c.Collector())
	if got := scrape(t, reg); len(got) != 0 {
		t.Fatalf("no groups: %v", got)
	}
	ms := stableGroup(h, "g", 2)
	want := map[string]float64{
		"logd_group_members/g": 2, "logd_group_generation/g": 2,
		"logd_group_rebalances_total/g": 2, "logd_group_state/g/Stable": 1,
	}
	if got := scrape(t, reg); !maps.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	h.c.LeaveGroup("g", ms[0].MemberID)
	h.c.LeaveGroup("g", ms[1].MemberID)
	want = map[string]float64{
		"logd_group_members/g": 0, "logd_group_generation/g": 3,
		"logd_group_rebalances_total/g": 3, "logd_group_state/g/Empty": 1,
	}
	if got := scrape(t, reg); !maps.Equal(got, want) {
		t.Fatalf("after both left: got %v\nwant %v", got, want)
	}
}

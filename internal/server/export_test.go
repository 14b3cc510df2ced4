package server

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// OutOfRangeForTest exposes the OUT_OF_RANGE status builder to tests.
var OutOfRangeForTest = outOfRange

// FollowerLagForTest reads logd_raft_follower_lag_entries for one follower
// of a partition this node leads.
func (s *Server) FollowerLagForTest(topic, partition, follower string) (float64, bool) {
	g, err := s.m.followerLag.GetMetricWithLabelValues(topic, partition, follower)
	if err != nil {
		return 0, false
	}
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return 0, false
	}
	v := m.GetGauge().GetValue()
	// A gauge that was never set reads 0 and is not reported: tell them
	// apart by the collector's current samples.
	found := false
	ch := make(chan prometheus.Metric, 64)
	go func() { s.m.followerLag.Collect(ch); close(ch) }()
	for mm := range ch {
		var d dto.Metric
		mm.Write(&d)
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["topic"] == topic && labels["partition"] == partition && labels["follower"] == follower {
			found = true
		}
	}
	return v, found
}

// AppendUncheckedForTest appends b to a partition's log as it is, past the
// produce path's batch.Validate: a batch stored before produce validated
// records, which readers must still get past.
func (s *Server) AppendUncheckedForTest(topic string, part int32, b []byte) error {
	p, err := s.topics.Partition(topic, part)
	if err != nil {
		return err
	}
	_, err = p.Log.Append(b)
	return err
}

package node

import "github.com/logd/logd/internal/server"

// FollowerLagForTest reads logd_raft_follower_lag_entries for one follower
// of a partition this node leads; false when the node reports none.
func (n *Node) FollowerLagForTest(topic, partition, follower string) (float64, bool) {
	mfs, err := n.reg.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != "logd_raft_follower_lag_entries" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == topic && labels["partition"] == partition && labels["follower"] == follower {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// AppendUncheckedForTest appends b to a partition's log as it is, past
// the produce path's batch checks: a batch stored before produce
// validated records, which readers must still get past.
func (n *Node) AppendUncheckedForTest(topic string, part int32, b []byte) error {
	return n.b.AppendUncheckedForTest(topic, part, b)
}

// API is the node's gRPC front-end, for tests that call its handlers
// directly.
func (n *Node) API() *server.Server { return n.api.srv }

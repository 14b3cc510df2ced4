package broker

import (
	"context"
	"sync"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
)

// RecordCounts are a node's counts of one topic's records since it
// started: appended as a partition's leader (logd_produce_records_total)
// and served to readers from its logs (logd_fetch_records_total). Each
// record is counted once, where it is appended or read: a request a node
// passes on is counted on the node that serves it.
type RecordCounts struct {
	Produced float64 `json:"produced"`
	Fetched  float64 `json:"fetched"`
}

// NodeRecordCounts is one member's RecordCounts by topic, or why it did
// not answer.
type NodeRecordCounts struct {
	Node   string                  `json:"node"`
	Topics map[string]RecordCounts `json:"topics"`
	Err    error                   `json:"-"`
}

// ClusterRecordCounts is every member's record counts, in id order: this
// node's own and the others' over the peer service, asked at once, each
// for at most cluster.StatusTimeout (a member that does not answer has
// Err). The sum over the members is the cluster's. Like /metrics, it
// needs describe on the cluster.
func (b *Broker) ClusterRecordCounts(ctx context.Context, pr Principal) ([]NodeRecordCounts, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	if b.plane.alone() {
		return []NodeRecordCounts{{Node: b.LocalNode().ID, Topics: b.m.recordCounts()}}, nil
	}
	nodes, _ := b.Nodes(ctx)
	self := b.LocalNode().ID
	out := make([]NodeRecordCounts, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i].Node = n.ID
		if n.ID == self {
			out[i].Topics = b.m.recordCounts()
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cluster.StatusTimeout)
			defer cancel()
			out[i].Err = b.peerCall(cctx, n.RaftAddr, opRecordCounts, pr, none{}, &out[i].Topics)
		})
	}
	wg.Wait()
	return out, nil
}

// peerRecordCounts answers opRecordCounts: this node's counts.
func (b *Broker) peerRecordCounts(ctx context.Context, pr Principal, _ none) (any, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.m.recordCounts(), nil
}

// recordCounts reads the record counters by topic.
func (m *metrics) recordCounts() map[string]RecordCounts {
	out := map[string]RecordCounts{}
	families, _ := m.counts.Gather()
	for _, f := range families {
		for _, c := range f.GetMetric() {
			topic := ""
			for _, l := range c.GetLabel() {
				if l.GetName() == "topic" {
					topic = l.GetValue()
				}
			}
			rc := out[topic]
			switch f.GetName() {
			case "logd_produce_records_total":
				rc.Produced = c.GetCounter().GetValue()
			case "logd_fetch_records_total":
				rc.Fetched = c.GetCounter().GetValue()
			}
			out[topic] = rc
		}
	}
	return out
}

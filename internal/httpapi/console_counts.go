package httpapi

import (
	"net/http"

	"github.com/logd/logd/broker"
)

// recordCountsJSON is GET /v1/cluster/record-counts: each member's record
// counters by topic since it started (broker.RecordCounts), from which the
// console charts the cluster's produce and consume rates: per node the
// change between two samples (a counter that went down is a node that
// restarted), summed over the nodes. A member that did not answer has
// answered false and an error.
type recordCountsJSON struct {
	Nodes []nodeRecordCountsJSON `json:"nodes"`
}

type nodeRecordCountsJSON struct {
	Node     string                         `json:"node"`
	Answered bool                           `json:"answered"`
	Error    string                         `json:"error,omitempty"`
	Topics   map[string]broker.RecordCounts `json:"topics"`
}

func (h *Handler) recordCounts(w http.ResponseWriter, r *http.Request) {
	counts, err := h.core.ClusterRecordCounts(r.Context(), h.principal(r))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	out := recordCountsJSON{Nodes: make([]nodeRecordCountsJSON, 0, len(counts))}
	for _, c := range counts {
		n := nodeRecordCountsJSON{Node: c.Node, Answered: c.Err == nil, Topics: c.Topics}
		if c.Err != nil {
			n.Error = c.Err.Error()
		}
		if n.Topics == nil {
			n.Topics = map[string]broker.RecordCounts{}
		}
		out.Nodes = append(out.Nodes, n)
	}
	writeJSON(w, http.StatusOK, out)
}

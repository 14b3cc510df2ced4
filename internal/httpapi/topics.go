package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/logd/logd/broker"
)

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

type nodeJSON struct {
	ID        string `json:"id"`
	APIAddr   string `json:"api_addr,omitempty"`
	KafkaAddr string `json:"kafka_addr,omitempty"`
	HTTPAddr  string `json:"http_addr,omitempty"`
	RaftAddr  string `json:"raft_addr,omitempty"`
}

func toNodeJSON(n broker.Node) nodeJSON {
	return nodeJSON{ID: n.ID, APIAddr: n.APIAddr, KafkaAddr: n.KafkaAddr, HTTPAddr: n.HTTPAddr, RaftAddr: n.RaftAddr}
}

type partitionJSON struct {
	Partition     int32    `json:"partition"`
	LogStart      int64    `json:"log_start"`
	HighWatermark int64    `json:"high_watermark"`
	SizeBytes     int64    `json:"size_bytes"`
	Leader        string   `json:"leader"`
	Replicas      []string `json:"replicas"`
	ISR           []string `json:"isr"`
	LeaderEpoch   int32    `json:"leader_epoch"`
}

type topicJSON struct {
	Name             string `json:"name"`
	Partitions       int32  `json:"partitions"`
	Replicas         int32  `json:"replicas"`
	RetentionMs      int64  `json:"retention_ms"`
	RetentionBytes   int64  `json:"retention_bytes"`
	RetentionRecords int64  `json:"retention_records"`
	SegmentBytes     int64  `json:"segment_bytes"`
	SegmentMs        int64  `json:"segment_ms"`
	// Kafka's cleanup.policy and compaction settings.
	CleanupPolicy          string  `json:"cleanup_policy"`
	MinCompactionLagMs     int64   `json:"min_compaction_lag_ms"`
	MaxCompactionLagMs     int64   `json:"max_compaction_lag_ms"`
	DeleteRetentionMs      int64   `json:"delete_retention_ms"`
	MinCleanableDirtyRatio float64 `json:"min_cleanable_dirty_ratio"`
	// Configs is every setting by its Kafka name, as POST and PATCH take
	// them (broker.TopicSettings).
	Configs       map[string]string `json:"configs"`
	PartitionInfo []partitionJSON   `json:"partition_info"`
}

func toTopicJSON(t broker.TopicInfo) topicJSON {
	c := t.Config
	j := topicJSON{Name: c.Name, Partitions: c.Partitions, Replicas: c.Replicas, RetentionMs: c.RetentionMs,
		RetentionBytes: c.RetentionBytes, RetentionRecords: c.RetentionRecords, SegmentBytes: c.SegmentBytes,
		SegmentMs: c.SegmentMs, Configs: topicConfigs(c), PartitionInfo: make([]partitionJSON, 0, len(t.Partitions))}
	cl := c.Cleanups()
	j.CleanupPolicy, j.MinCompactionLagMs, j.MaxCompactionLagMs = cl.Policy, cl.MinCompactionLagMs, cl.MaxCompactionLagMs
	j.DeleteRetentionMs, j.MinCleanableDirtyRatio = cl.DeleteRetentionMs, cl.MinCleanableDirtyRatio
	for _, p := range t.Partitions {
		j.PartitionInfo = append(j.PartitionInfo, partitionJSON{Partition: p.ID, LogStart: p.LogStart,
			HighWatermark: p.HighWatermark, SizeBytes: p.SizeBytes, Leader: p.Leader,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), LeaderEpoch: p.LeaderEpoch})
	}
	return j
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h *Handler) listTopics(w http.ResponseWriter, r *http.Request) {
	ts, err := h.core.Topics(r.Context(), h.principal(r))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	out := struct {
		Topics []topicJSON `json:"topics"`
	}{Topics: make([]topicJSON, 0, len(ts))}
	for _, t := range ts {
		out.Topics = append(out.Topics, toTopicJSON(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) describeTopic(w http.ResponseWriter, r *http.Request) {
	t, err := h.core.Topic(r.Context(), h.principal(r), r.PathValue("topic"))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toTopicJSON(t))
}

// cluster answers the nodes the metadata lists, each with whether it
// answered this node just now (another node gets cluster.StatusTimeout).
func (h *Handler) cluster(w http.ResponseWriter, r *http.Request) {
	st, err := h.core.ClusterStatus(r.Context(), h.principal(r), false)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	type clusterNodeJSON struct {
		nodeJSON
		Alive bool `json:"alive"`
	}
	out := struct {
		Self  nodeJSON          `json:"self"`
		Nodes []clusterNodeJSON `json:"nodes"`
	}{Self: toNodeJSON(h.core.LocalNode()), Nodes: make([]clusterNodeJSON, 0, len(st.Nodes))}
	for _, n := range st.Nodes {
		out.Nodes = append(out.Nodes, clusterNodeJSON{toNodeJSON(n.Node), n.Alive})
	}
	writeJSON(w, http.StatusOK, out)
}

// topicConfigs is a topic's settings by Kafka name, every one of them.
func topicConfigs(c broker.TopicConfig) map[string]string {
	m := make(map[string]string, len(broker.TopicSettings))
	for _, s := range broker.TopicSettings {
		m[s.Name] = s.Value(c)
	}
	return m
}

package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/logd/logd/client"
)

// The JSON objects of --json on the commands that print tables. Field
// names are stable: scripts depend on them. Limits use -1 for unlimited,
// durations are milliseconds (as in the gRPC API), times RFC 3339.

type topicJSON struct {
	Name             string `json:"name"`
	Partitions       int32  `json:"partitions"`
	Replicas         int32  `json:"replicas"`
	Created          string `json:"created,omitempty"`
	RetentionMs      int64  `json:"retention_ms"`
	RetentionBytes   int64  `json:"retention_bytes"`
	RetentionRecords int64  `json:"retention_records"`
	SegmentBytes     int64  `json:"segment_bytes"`
	SegmentMs        int64  `json:"segment_ms"`
	CleanupPolicy    string `json:"cleanup_policy,omitempty"`
}

func toTopicJSON(t client.TopicInfo) topicJSON {
	j := topicJSON{Name: t.Name, Partitions: t.Partitions, Replicas: t.Replicas,
		RetentionMs: ms(t.Config.RetentionTime), RetentionBytes: t.Config.RetentionBytes,
		RetentionRecords: t.Config.RetentionRecords, SegmentBytes: t.Config.SegmentBytes, SegmentMs: ms(t.Config.SegmentAge),
		CleanupPolicy: t.Config.CleanupPolicy}
	if !t.Created.IsZero() {
		j.Created = t.Created.UTC().Format(time.RFC3339)
	}
	return j
}

// ms is d in milliseconds, keeping client.Unlimited as -1.
func ms(d time.Duration) int64 {
	if d < 0 {
		return client.Unlimited
	}
	return d.Milliseconds()
}

type partitionJSON struct {
	Partition      int32    `json:"partition"`
	LogStartOffset int64    `json:"log_start_offset"`
	HighWatermark  int64    `json:"high_watermark"`
	Records        int64    `json:"records"`
	SizeBytes      int64    `json:"size_bytes"`
	Segments       int32    `json:"segments"`
	Leader         string   `json:"leader,omitempty"`
	Replicas       []string `json:"replicas,omitempty"`
}

type topicDetailJSON struct {
	Topic         topicJSON       `json:"topic"`
	RetentionRule string          `json:"retention_rule"`
	Partitions    []partitionJSON `json:"partitions"`
}

func writeTopicDetailJSON(w io.Writer, d client.TopicDetail) error {
	j := topicDetailJSON{Topic: toTopicJSON(d.Topic), RetentionRule: retentionRule, Partitions: []partitionJSON{}}
	for _, p := range d.Partitions {
		j.Partitions = append(j.Partitions, partitionJSON{Partition: p.Partition, LogStartOffset: p.LogStartOffset,
			HighWatermark: p.HighWatermark, Records: p.HighWatermark - p.LogStartOffset, SizeBytes: p.SizeBytes,
			Segments: p.Segments, Leader: p.Leader, Replicas: p.Replicas})
	}
	return json.NewEncoder(w).Encode(j)
}

type nodeJSON struct {
	ID        string `json:"id"`
	APIAddr   string `json:"api_addr"`
	RaftAddr  string `json:"raft_addr,omitempty"`
	KafkaID   int32  `json:"kafka_id"`
	KafkaAddr string `json:"kafka_addr,omitempty"`
	Alive     bool   `json:"alive"`
	Answering bool   `json:"answering"`
}

type raftPartitionJSON struct {
	Topic       string   `json:"topic"`
	Partition   int32    `json:"partition"`
	Leader      string   `json:"leader"`
	Replicas    []string `json:"replicas"`
	RaftState   string   `json:"raft_state"`
	Term        uint64   `json:"term"`
	CommitIndex uint64   `json:"commit_index"`
}

type clusterJSON struct {
	AnsweringNode string              `json:"answering_node"`
	Nodes         []nodeJSON          `json:"nodes"`
	Partitions    []raftPartitionJSON `json:"partitions"`
}

func writeClusterJSON(w io.Writer, cs client.ClusterStatus) error {
	j := clusterJSON{AnsweringNode: cs.Self, Nodes: []nodeJSON{}, Partitions: []raftPartitionJSON{}}
	for _, n := range cs.Nodes {
		j.Nodes = append(j.Nodes, nodeJSON{ID: n.ID, APIAddr: n.APIAddr, RaftAddr: n.RaftAddr,
			KafkaID: n.KafkaID, KafkaAddr: n.KafkaAddr, Alive: n.Alive, Answering: n.ID == cs.Self})
	}
	for _, p := range cs.Partitions {
		j.Partitions = append(j.Partitions, raftPartitionJSON{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
			Replicas: p.Replicas, RaftState: p.RaftState, Term: p.Term, CommitIndex: p.CommitIndex})
	}
	return json.NewEncoder(w).Encode(j)
}

package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/node/nodetest"
)

// clusterTopic is the part of a topic's JSON these tests read.
type clusterTopic struct {
	Error         string `json:"error"`
	Partitions    int32  `json:"partitions"`
	Replicas      int32  `json:"replicas"`
	CleanupPolicy string `json:"cleanup_policy"`
	PartitionInfo []struct {
		Leader string `json:"leader"`
	} `json:"partition_info"`
}

// sendJSON sends a JSON body and decodes the answer.
func sendJSON(t *testing.T, method, url, body string) (int, clusterTopic) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans clusterTopic
	json.NewDecoder(resp.Body).Decode(&ans)
	return resp.StatusCode, ans
}

// TestTopicAdminOnAnyNodeOfCluster: a node that does not lead the
// metadata creates a compacted topic and changes its policy over HTTP,
// passing both on to the metadata leader; the topic is usable through it
// at once, and every node comes to show the change.
func TestTopicAdminOnAnyNodeOfCluster(t *testing.T) {
	c, _ := httpCluster(t, "first", 1)
	var serving *nodetest.Node
	for _, n := range c.Nodes() {
		if !n.Server().Broker().Cluster().IsMetaLeader() {
			serving = n
		}
	}
	base := "http://" + serving.Server().HTTPAddr()
	st, created := sendJSON(t, "POST", base+"/v1/topics", `{"name": "state", "partitions": 2, "configs": {"cleanup.policy": "compact"}}`)
	if st != http.StatusCreated || created.CleanupPolicy != "compact" || created.Replicas != 3 || len(created.PartitionInfo) != 2 {
		t.Fatalf("create on %s (not the metadata leader): %d %+v", serving.ID, st, created)
	}
	var got clusterTopic
	if st := getJSON(t, base+"/v1/topics/state", &got); st != http.StatusOK || got.CleanupPolicy != "compact" {
		t.Fatalf("GET on %s right after its create: %d %+v", serving.ID, st, got)
	}
	st, altered := sendJSON(t, "PATCH", base+"/v1/topics/state", `{"configs": {"cleanup.policy": "compact,delete"}}`)
	if st != http.StatusOK || altered.CleanupPolicy != "compact,delete" {
		t.Fatalf("PATCH on %s: %d %+v", serving.ID, st, altered)
	}
	for _, n := range c.Nodes() {
		waitFor(t, 20*time.Second, n.ID+" to show the new policy", func() bool {
			var tj clusterTopic
			return getJSON(t, "http://"+n.Server().HTTPAddr()+"/v1/topics/state", &tj) == http.StatusOK && tj.CleanupPolicy == "compact,delete"
		})
	}
	if st, ans := sendJSON(t, "POST", base+"/v1/topics", `{"name": "state"}`); st != http.StatusConflict {
		t.Fatalf("create it again on %s: %d %+v, want 409", serving.ID, st, ans)
	}
}

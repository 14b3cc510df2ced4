package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/logd/logd/internal/httpapi"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/offsets"
)

// TestConsoleChartsClusterWide: on a 3-node cluster, a node that leads
// none of a topic's partitions reports the cluster's record counts (each
// node's, over the peer service) and its console charts the cluster's
// produce and consume rates, though the node itself appended and served
// none of the records; a group's lag there is the leader's.
func TestConsoleChartsClusterWide(t *testing.T) {
	c, leaders := httpCluster(t, "rates", 1)
	var serving *nodetest.Node
	for _, n := range c.Nodes() {
		if n.ID != leaders[0] {
			serving = n
		}
	}
	base := "http://" + serving.Server().HTTPAddr()
	p := httpapi.OpenPage(t, base+"/")
	p.WaitText(t, "#topics", "rates", 20*time.Second)
	sample := func() {
		t.Helper()
		p.Eval(t, `window.done = false; logdCharts.sample().then(() => window.done = true)`)
		waitFor(t, 20*time.Second, "a sample", func() bool { return p.Eval(t, "window.done") == "true" })
	}
	sample()
	postUntilStored(t, base, "rates", "twelve", keyed("r", 12))
	var read struct {
		Records []struct{} `json:"records"`
	}
	if st := getJSON(t, base+"/v1/topics/rates/records?partition=0&offset=0&max=100", &read); st != http.StatusOK || len(read.Records) != 12 {
		t.Fatalf("read back: %d, %d records", st, len(read.Records))
	}
	sample()

	var counts struct {
		Nodes []struct {
			Node     string `json:"node"`
			Answered bool   `json:"answered"`
			Topics   map[string]struct {
				Produced, Fetched float64
			} `json:"topics"`
		} `json:"nodes"`
	}
	if st := getJSON(t, base+"/v1/cluster/record-counts", &counts); st != http.StatusOK || len(counts.Nodes) != 3 {
		t.Fatalf("record counts: %d %+v", st, counts)
	}
	var produced, fetched float64
	for _, n := range counts.Nodes {
		if !n.Answered {
			t.Fatalf("%s did not answer: %+v", n.Node, counts)
		}
		if n.Node == serving.ID && (n.Topics["rates"].Produced != 0 || n.Topics["rates"].Fetched != 0) {
			t.Fatalf("%s, which leads no partition, counts %+v", n.Node, n.Topics["rates"])
		}
		produced += n.Topics["rates"].Produced
		fetched += n.Topics["rates"].Fetched
	}
	if produced != 12 || fetched != 12 {
		t.Fatalf("the cluster counts %v records appended and %v served, want 12 and 12: %+v", produced, fetched, counts)
	}
	total := `kind => Math.round(logdCharts.rates("rates", kind).reduce((sum, r, i) => sum + r * (logdCharts.samples[i + 1].t - logdCharts.samples[i].t) / 1000, 0))`
	if got := p.Eval(t, `(`+total+`)("produced") + " " + (`+total+`)("fetched")`); got != "12 12" {
		t.Fatalf("the console's rates on %s add up to %s records appended and served, want 12 12", serving.ID, got)
	}

	// The group's lag on this node is the leader's high watermark less
	// the commit.
	if err := serving.Server().Broker().AnyNode().CommitOffsets(context.Background(), "", "lagging", "", -1,
		[]offsets.Committed{{Topic: "rates", Partition: 0, Offset: 2}}); err != nil {
		t.Fatal(err)
	}
	p.Eval(t, `location.hash = "#/groups/lagging"`)
	p.WaitText(t, "main", fmt.Sprintf("total lag %d", 12-2), 20*time.Second)
}

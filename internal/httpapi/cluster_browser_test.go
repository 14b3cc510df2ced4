package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/logd/logd/internal/httpapi"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/offsets"
)

// TestConsoleOnAnyNodeOfCluster drives the console in headless chromium
// on a node of a 3-node cluster that does not lead the metadata: the
// topic list, the groups (held by another node), the cluster page, a
// topic's live tail of partitions other nodes lead, the produce form; and
// the live tail goes on when another node that leads a partition stops,
// showing every record once.
func TestConsoleOnAnyNodeOfCluster(t *testing.T) {
	c, leaders := httpCluster(t, "ui", 3)
	nodes := c.Nodes()
	var serving *nodetest.Node
	for _, n := range nodes {
		if !n.Server().Broker().Cluster().IsMetaLeader() {
			serving = n
		}
	}
	ctx := context.Background()
	if err := serving.Server().Broker().AnyNode().CommitOffsets(ctx, "", "console-group", "", -1,
		[]offsets.Committed{{Topic: "ui", Partition: 0, Offset: 0}}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + serving.Server().HTTPAddr()
	t.Logf("leaders %v; the console on %s", leaders, serving.ID)
	p := httpapi.OpenPage(t, base+"/")
	p.WaitText(t, "#topics", "ui", 20*time.Second)
	p.Eval(t, `location.hash = "#/groups"`)
	p.WaitText(t, "#groups", "console-group", 20*time.Second)
	p.Eval(t, `location.hash = "#/groups/console-group"`)
	p.WaitText(t, "#lag", "ui", 20*time.Second)
	p.Eval(t, `location.hash = "#/cluster"`)
	for _, n := range nodes {
		p.WaitText(t, "#nodes", n.ID, 20*time.Second)
	}

	p.Eval(t, `location.hash = "#/topics/ui"`)
	p.WaitText(t, "#partitions", "High watermark", 20*time.Second)
	p.WaitText(t, "#status", "live tail connected", 20*time.Second)
	// The node stopped leads a partition when another than the serving
	// node does; the other one takes the first records.
	var other, victim *nodetest.Node
	for _, n := range nodes {
		if n != serving && (victim == nil || slices.Contains(leaders, n.ID)) {
			victim = n
		}
	}
	for _, n := range nodes {
		if n != serving && n != victim {
			other = n
		}
	}
	postUntilStored(t, "http://"+other.Server().HTTPAddr(), "ui", "first", keyed("first", 12))
	for _, v := range values("first", 12) {
		p.WaitText(t, "#tail", v, 20*time.Second)
	}
	p.Eval(t, `document.querySelector("#produce-key").value = "form-key"; document.querySelector("#produce-value").value = "from-the-form"; document.querySelector("form.produce").requestSubmit()`)
	p.WaitText(t, "#produce-result", "written at", 20*time.Second)
	p.WaitText(t, "#tail", "from-the-form", 20*time.Second)

	t.Logf("stopping %s during the live tail", victim.ID)
	victim.Stop()
	postUntilStored(t, base, "ui", "after", keyed("after", 12))
	for _, v := range values("after", 12) {
		p.WaitText(t, "#tail", v, 60*time.Second)
	}
	if n := p.Eval(t, `document.querySelectorAll("#tail li").length`); n != strconv.Itoa(12+1+12) {
		t.Fatalf("the live tail shows %s records, want %d (each once)", n, 12+1+12)
	}
	dir := os.Getenv("LOGD_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p.Screenshot(t, filepath.Join(dir, fmt.Sprintf("console-cluster-%s.png", serving.ID)))
}

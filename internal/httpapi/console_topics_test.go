package httpapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConsoleCreatesCompactedTopic drives the console in headless
// chromium: the topics page's form creates a compacted topic, whose page
// shows its cleanup policy; the settings form changes it live, and a value
// the core refuses shows the answer's error and changes nothing.
func TestConsoleCreatesCompactedTopic(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	srv, _ := serve(t, e.b, Config{})
	p := openPage(t, srv.URL+"/")
	p.waitText(t, "form.create-topic", "Create", 10*time.Second)
	p.eval(t, `document.querySelector("#create-name").value = "kv-state";
		document.querySelector("#create-partitions").value = "2";
		document.querySelector("#create-policy").value = "compact";
		document.querySelector("form.create-topic").requestSubmit()`)
	p.waitText(t, "h1", "Topic kv-state", 10*time.Second)
	p.waitText(t, "#settings", "Cleanup policy compact.", 5*time.Second)
	p.waitText(t, "#settings", "Min compaction lag 0 ms", 5*time.Second)
	ti, err := e.b.TopicLayout(context.Background(), "", "kv-state")
	if err != nil || ti.Config.Partitions != 2 || ti.Config.Cleanups().Policy != "compact" {
		t.Fatalf("the form's topic: %+v %v", ti.Config, err)
	}
	// A second create of the name shows the refusal.
	p.eval(t, `location.hash = "#/topics"`)
	p.waitText(t, "#topics", "kv-state", 10*time.Second)
	p.waitText(t, "#topics", "compact", 5*time.Second)
	p.eval(t, `document.querySelector("#create-name").value = "kv-state"; document.querySelector("form.create-topic").requestSubmit()`)
	p.waitText(t, "#create-result", "failed: topic already exists", 5*time.Second)

	p.eval(t, `location.hash = "#/topics/kv-state"`)
	p.waitText(t, "#settings", "Cleanup policy compact.", 10*time.Second)
	p.eval(t, `document.querySelector("#set-policy").value = "compact,delete";
		document.querySelector("#set-delete-retention").value = "5000";
		document.querySelector("form.settings").requestSubmit()`)
	p.waitText(t, "#settings-result", "saved", 5*time.Second)
	p.waitText(t, "#settings", "Cleanup policy compact,delete.", 5*time.Second)
	p.waitText(t, "#settings", "tombstones kept 5 s", 5*time.Second)
	p.eval(t, `document.querySelector("#set-lag").value = "-5"; document.querySelector("form.settings").requestSubmit()`)
	p.waitText(t, "#settings-result", "failed: invalid topic config: min compaction lag must be between 0", 5*time.Second)
	ti, err = e.b.TopicLayout(context.Background(), "", "kv-state")
	if cl := ti.Config.Cleanups(); err != nil || cl.Policy != "compact,delete" || cl.DeleteRetentionMs != 5000 || cl.MinCompactionLagMs != 0 {
		t.Fatalf("after the console's changes: %+v %v", cl, err)
	}
	dir := os.Getenv("LOGD_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p.screenshot(t, filepath.Join(dir, "console-topic-settings.png"))
}

package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// TestE2ETopicCreateCompacted: a topic created over HTTP with Kafka's
// config names has them, as the create's answer and GET show.
func TestE2ETopicCreateCompacted(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	srv, _ := serve(t, e.b, Config{})
	var created topicJSON
	st := do(t, "POST", srv.URL+"/v1/topics",
		`{"name": "state", "partitions": 3, "configs": {"cleanup.policy": "compact", "min.compaction.lag.ms": "0", "delete.retention.ms": 60000}}`, nil, &created)
	if st != http.StatusCreated || created.CleanupPolicy != "compact" || created.Partitions != 3 || len(created.PartitionInfo) != 3 {
		t.Fatalf("create: %d %+v", st, created)
	}
	var got topicJSON
	if st := do(t, "GET", srv.URL+"/v1/topics/state", "", nil, &got); st != http.StatusOK {
		t.Fatalf("GET: %d", st)
	}
	if got.CleanupPolicy != "compact" || got.MinCompactionLagMs != 0 || got.DeleteRetentionMs != 60000 || got.Partitions != 3 ||
		got.Configs["cleanup.policy"] != "compact" || got.Configs["delete.retention.ms"] != "60000" || got.Configs["retention.ms"] != "604800000" {
		t.Fatalf("GET after create: %+v", got)
	}
	// The core has it too: a record without a key is refused there.
	cfg, err := e.b.TopicLayout(context.Background(), "", "state")
	if err != nil || !cfg.Config.Cleanups().Compacted() {
		t.Fatalf("core's config: %+v %v", cfg.Config, err)
	}
	// Left out, partitions and the settings are the defaults.
	if st := do(t, "POST", srv.URL+"/v1/topics", `{"name": "plain"}`, nil, &created); st != http.StatusCreated ||
		created.Partitions != 1 || created.CleanupPolicy != "delete" {
		t.Fatalf("create with defaults: %d %+v", st, created)
	}
}

// TestE2ETopicAlterCleanupPolicy: PATCH changes a topic's settings live,
// to compact,delete and back, and null puts a setting back to its default.
func TestE2ETopicAlterCleanupPolicy(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "t", 1)
	srv, _ := serve(t, e.b, Config{})
	patch := func(body string) topicJSON {
		t.Helper()
		var ans topicJSON
		if st := do(t, "PATCH", srv.URL+"/v1/topics/t", body, nil, &ans); st != http.StatusOK {
			t.Fatalf("PATCH %s: %d %+v", body, st, ans)
		}
		var got topicJSON
		do(t, "GET", srv.URL+"/v1/topics/t", "", nil, &got)
		if got.CleanupPolicy != ans.CleanupPolicy || got.RetentionMs != ans.RetentionMs || got.DeleteRetentionMs != ans.DeleteRetentionMs {
			t.Fatalf("PATCH %s answered %+v, GET shows %+v", body, ans, got)
		}
		return got
	}
	if got := patch(`{"configs": {"cleanup.policy": "compact,delete", "retention.ms": "3600000", "delete.retention.ms": "1000"}}`); got.CleanupPolicy != "compact,delete" ||
		got.RetentionMs != 3600000 || got.DeleteRetentionMs != 1000 {
		t.Fatalf("to compact,delete: %+v", got)
	}
	if got := patch(`{"configs": {"cleanup.policy": "delete"}}`); got.CleanupPolicy != "delete" || got.RetentionMs != 3600000 || got.DeleteRetentionMs != 1000 {
		t.Fatalf("back to delete (the others kept): %+v", got)
	}
	if got := patch(`{"configs": {"cleanup.policy": "delete, compact"}}`); got.CleanupPolicy != "compact,delete" {
		t.Fatalf("Kafka's other spelling: %+v", got)
	}
	def := broker.DefaultConfig("t")
	if got := patch(`{"configs": {"retention.ms": null, "delete.retention.ms": null, "cleanup.policy": null}}`); got.CleanupPolicy != "delete" ||
		got.RetentionMs != def.RetentionMs || got.DeleteRetentionMs != broker.DefaultCleanup().DeleteRetentionMs {
		t.Fatalf("null to the defaults: %+v", got)
	}
}

// TestE2ETopicAdminBadRequests: each mistake is answered with its status
// and a message that says what to fix, and changes nothing.
func TestE2ETopicAdminBadRequests(t *testing.T) {
	e := newBrokerEnv(t).(brokerEnv)
	e.createTopic(t, "t", 1)
	srv, _ := serve(t, e.b, Config{MaxBodyBytes: 1 << 10})
	cases := []struct {
		method, path, body string
		status             int
		want               string // in the error message
	}{
		{"POST", "/v1/topics", `{"name": "x", "configs": {"cleanup.polcy": "compact"}}`, 400, `unknown config "cleanup.polcy"`},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"cleanup.policy": "shred"}}`, 400, "want delete, compact or compact,delete"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"retention.ms": "a week"}}`, 400, "retention.ms"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"retention.ms": true}}`, 400, "retention.ms"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"retention.ms": null}}`, 400, "leave it out for the default"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"min.cleanable.dirty.ratio": "2"}}`, 400, "between 0 and 1"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"compression.type": "zstd"}}`, 400, "compression.type=producer"},
		{"POST", "/v1/topics", `{"name": "a/b"}`, 400, "a/b"},
		{"POST", "/v1/topics", `{"partitions": 2}`, 400, "name the topic"},
		{"POST", "/v1/topics", `{"name": "x", "partitions": 0}`, 400, "partitions must be between 1 and"},
		{"POST", "/v1/topics", `{"name": "x", "replicas": -1}`, 400, "replicas must be positive"},
		{"POST", "/v1/topics", `{"name": "x", "replicas": 3}`, 400, "replicas must be 1"},
		{"POST", "/v1/topics", `{"name": "x", "partitons": 2}`, 400, "partitons"},
		{"POST", "/v1/topics", `{"name": "x"} {"name": "y"}`, 400, "more than one"},
		{"POST", "/v1/topics", `not json`, 400, "not the JSON object"},
		{"POST", "/v1/topics", `{"name": "t"}`, 409, "exists"},
		{"POST", "/v1/topics", `{"name": "x", "configs": {"segment.ms": "` + strings.Repeat("9", 2000) + `"}}`, 413, "over 1024 bytes"},
		{"PATCH", "/v1/topics/t", `{"configs": {}}`, 400, "changes no setting"},
		{"PATCH", "/v1/topics/t", `{"configs": {"segment.bytes": "1"}}`, 400, "segment-bytes"},
		{"PATCH", "/v1/topics/t", `{"partitions": 3}`, 400, "partitions"},
		{"PATCH", "/v1/topics/nope", `{"configs": {"cleanup.policy": "compact"}}`, 404, "nope"},
	}
	for _, c := range cases {
		var ans errorBody
		if st := do(t, c.method, srv.URL+c.path, c.body, nil, &ans); st != c.status || !strings.Contains(ans.Error, c.want) {
			t.Errorf("%s %s %.80s: %d %q, want %d with %q", c.method, c.path, c.body, st, ans.Error, c.status, c.want)
		}
	}
	var ans errorBody
	if st := do(t, "POST", srv.URL+"/v1/topics", `{"name": "x"}`, map[string]string{"Content-Type": "text/plain"}, &ans); st != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain create: %d %q, want 415", st, ans.Error)
	}
	if st := do(t, "DELETE", srv.URL+"/v1/topics/t", "", nil, &ans); st != http.StatusMethodNotAllowed || !strings.Contains(ans.Error, "PATCH") {
		t.Errorf("DELETE a topic: %d %q, want 405 naming PATCH", st, ans.Error)
	}
	ts, err := e.b.Topics(context.Background(), "")
	if err != nil || len(ts) != 1 {
		t.Fatalf("topics after the refused requests: %d %v, want t alone", len(ts), err)
	}
	if c := ts[0].Config; c.Cleanups() != broker.DefaultCleanup() || c.SegmentBytes != broker.DefaultConfig("t").SegmentBytes {
		t.Fatalf("t changed by refused requests: %+v", c)
	}
}

// TestE2ETopicAdminRefusedPrincipal: a principal the ACLs do not allow to
// create or alter topics is answered 403 and changes nothing; a super user
// may.
func TestE2ETopicAdminRefusedPrincipal(t *testing.T) {
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: broker.FsyncPolicy{Mode: broker.FsyncNever},
		Auth: broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"})
	t.Cleanup(func() {
		b.Shutdown()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	srv, _ := serve(t, b, Config{Principal: func(r *http.Request) broker.Principal {
		return broker.Principal(r.Header.Get("X-Test-Principal"))
	}})
	as := func(p string) map[string]string { return map[string]string{"X-Test-Principal": p} }
	var ans errorBody
	if st := do(t, "POST", srv.URL+"/v1/topics", `{"name": "t", "configs": {"cleanup.policy": "compact"}}`, as("User:alice"), &ans); st != http.StatusForbidden {
		t.Fatalf("alice creates t: %d %q, want 403", st, ans.Error)
	}
	if _, err := b.TopicLayout(context.Background(), "User:admin", "t"); err == nil {
		t.Fatal("a refused create made the topic")
	}
	if st := do(t, "POST", srv.URL+"/v1/topics", `{"name": "t"}`, as("User:admin"), nil); st != http.StatusCreated {
		t.Fatalf("admin creates t: %d, want 201", st)
	}
	if st := do(t, "PATCH", srv.URL+"/v1/topics/t", `{"configs": {"cleanup.policy": "compact"}}`, as("User:alice"), &ans); st != http.StatusForbidden {
		t.Fatalf("alice alters t: %d %q, want 403", st, ans.Error)
	}
	ti, err := b.TopicLayout(context.Background(), "User:admin", "t")
	if err != nil || ti.Config.Cleanups().Policy != "delete" {
		t.Fatalf("after alice's refused change: %+v %v", ti.Config, err)
	}
	var got topicJSON
	if st := do(t, "PATCH", srv.URL+"/v1/topics/t", `{"configs": {"cleanup.policy": "compact"}}`, as("User:admin"), &got); st != http.StatusOK || got.CleanupPolicy != "compact" {
		t.Fatalf("admin alters t: %d %+v", st, got)
	}
}

package auth

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// syncBuffer is a log sink safe for the handler's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
}

// counterValue reads one series of the collector through a registry, as a
// scrape would.
func counterValue(t *testing.T, c prometheus.Collector, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			match := true
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					match = false
				}
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestDenialAuditRateLimitsLogsAndCountsAll(t *testing.T) {
	var sink syncBuffer
	audit := NewDenialAudit(slog.New(slog.NewJSONHandler(&sink, nil)), 10, 5)
	clock := time.Unix(1_700_000_000, 0)
	audit.now = func() time.Time { return clock }
	a, err := NewAuthorizer(AuthorizerConfig{Mode: AuthzOn, ACLs: NewMemoryACLStore(), Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Principal: bob, Addr: "10.0.0.7:51234"}
	for range 8 {
		_ = a.Authorize(id, OpWrite, Topic("orders"))
	}
	if n := len(sink.lines()); n != 5 {
		t.Fatalf("%d lines for 8 denials in one instant with a burst of 5", n)
	}
	clock = clock.Add(time.Second) // ten more tokens, capped at the burst
	_ = a.Authorize(id, OpDelete, Group("g"))
	lines := sink.lines()
	last := lines[len(lines)-1]
	want := map[string]any{"msg": "request denied", "principal": "User:bob", "operation": "delete",
		"resource_type": "group", "resource": "g", "source": "10.0.0.7:51234", "suppressed": 3.0, "reason": "no matching ACL"}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("log %s = %v, want %v (line %v)", k, last[k], v, last)
		}
	}
	if got := counterValue(t, audit, map[string]string{"operation": "write", "resource_type": "topic"}); got != 8 {
		t.Errorf("logd_authz_denied_total{write,topic} = %v, want 8", got)
	}
	if got := counterValue(t, audit, map[string]string{"operation": "delete", "resource_type": "group"}); got != 1 {
		t.Errorf("logd_authz_denied_total{delete,group} = %v, want 1", got)
	}
	// Filtering a listing is not a refused request: nothing is audited.
	a.Allowed(bob, OpDescribe, Topic("orders"))
	if n := len(sink.lines()); n != 6 {
		t.Errorf("Allowed logged: %d lines", n)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(audit); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "logd_authz_denied_total" {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
}

package node_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
)

// The HTTP port under --auth required and --authz on: /healthz and
// /readyz answer everyone; the API and /metrics answer 401 with
// WWW-Authenticate without credentials or with wrong ones, 403 with a
// JSON error for a principal the ACLs refuse; pprof is not served
// without --pprof.
func TestHTTPAuth(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.TLS = tlsconfig.ServerFiles{CertFile: cert, KeyFile: key}
		secured(c)
		c.Auth.BootstrapUser, c.Auth.BootstrapPassword = "admin", "admin-pw"
	})
	ctx := ctx(t)
	admin := passwordClient(t, s.Addr(), ca.File, "admin", "admin-pw")
	for i := 0; ; i++ {
		err := admin.Admin().CreateUser(ctx, "alice", "alice-pw", false)
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	get := func(path, user, pw string) (int, http.Header, string) {
		t.Helper()
		return httpGet(t, hc, "https://"+s.HTTPAddr()+path, user, pw)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _, _ := get(p, "", ""); code != http.StatusOK {
			t.Fatalf("GET %s without credentials: %d, want 200", p, code)
		}
	}
	for _, p := range []string{"/v1/topics", "/metrics", "/"} {
		for _, cred := range [][2]string{{"", ""}, {"alice", "wrong"}} {
			code, h, body := get(p, cred[0], cred[1])
			if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic") {
				t.Fatalf("GET %s as %q: %d %q, want 401 with WWW-Authenticate", p, cred[0], code, h.Get("WWW-Authenticate"))
			}
			var e struct{ Error string }
			if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
				t.Fatalf("GET %s as %q: body %q is not a JSON error", p, cred[0], body)
			}
		}
	}
	// alice is known but has no ACL: her topic listing is empty (a
	// listing filters), a topic is 403, /metrics is 403.
	if code, _, body := get("/v1/topics", "alice", "alice-pw"); code != http.StatusOK || strings.Contains(body, "orders") {
		t.Fatalf("alice lists topics: %d %s", code, body)
	}
	if _, err := admin.Admin().CreateTopic(ctx, "orders", clientTopic(1)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/topics/orders", "/metrics"} {
		code, _, body := get(p, "alice", "alice-pw")
		if code != http.StatusForbidden || !strings.Contains(body, "User:alice") {
			t.Fatalf("alice GET %s: %d %s, want 403 naming her", p, code, body)
		}
	}
	if code, _, body := get("/v1/topics/orders", "admin", "admin-pw"); code != http.StatusOK {
		t.Fatalf("admin GET /v1/topics/orders: %d %s", code, body)
	}
	if code, _, body := get("/metrics", "admin", "admin-pw"); code != http.StatusOK || !strings.Contains(body, "logd_authz_denied_total") {
		t.Fatalf("admin GET /metrics: %d, or no logd_authz_denied_total in it", code)
	}
	if code, _, _ := get("/debug/pprof/", "admin", "admin-pw"); code == http.StatusOK {
		t.Fatal("pprof is served without --pprof")
	}
}

// With --pprof the profiler answers (and --auth none needs nothing).
func TestPProfFlag(t *testing.T) {
	s := nodetest.Start(t, func(c *node.Config) { c.HTTPAddr = "127.0.0.1:0"; c.PProf = true })
	resp, err := http.Get("http://" + s.HTTPAddr() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/cmdline with --pprof: %s", resp.Status)
	}
}

func clientTopic(parts int32) client.TopicOptions { return client.TopicOptions{Partitions: parts} }

// httpGet GETs url, with Basic credentials when user is set.
func httpGet(t *testing.T, hc *http.Client, url, user, pw string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pw)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

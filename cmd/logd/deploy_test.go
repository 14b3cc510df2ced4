package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/logdbin"
	"github.com/logd/logd/internal/testcerts"
)

// deploy/logd.service is hardened as the README says, and systemd accepts
// it without a warning (systemd-analyze verify only warns about unknown
// keys and bad values, so any output fails the test).
func TestDeploySystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/logd.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(?m)^DynamicUser=yes$`, `(?m)^NoNewPrivileges=yes$`, `(?m)^ProtectSystem=strict$`,
		`(?m)^StateDirectory=logd$`, `(?m)^ExecStart=/usr/local/bin/logd serve --data-dir /var/lib/logd$`, `(?m)^CapabilityBoundingSet=$`} {
		if !regexp.MustCompile(want).Match(unit) {
			t.Errorf("deploy/logd.service lacks %s", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the unit's syntax is not checked")
	}
	// verify wants ExecStart's binary to exist: point it at the one built.
	path := filepath.Join(t.TempDir(), "logd.service")
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/logd", logdbin.Binary(t))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify deploy/logd.service: %v\n%s", err, out)
	}
}

// deploy/grafana/logd.json is a Grafana dashboard whose every query names
// metrics a running node exports (a histogram's _bucket, _sum and _count
// count as the histogram): a single node after a produce and a group's
// consume, a node with --authz on after a refused request, and the leader
// of a 2-node cluster's replicated partition (its follower lag). The panels
// the README promises (group lag, follower lag, authorization denials)
// are there.
func TestDeployGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/logd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana/logd.json is not JSON: %v", err)
	}
	if dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("deploy/grafana/logd.json: title %q, %d panels", dash.Title, len(dash.Panels))
	}
	exported := map[string]bool{}
	for _, text := range dashboardMetrics(t) {
		for _, line := range strings.Split(text, "\n") {
			if name, _, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " "); strings.HasPrefix(line, "# TYPE ") {
				exported[name] = true
			}
		}
	}
	name := regexp.MustCompile(`\blogd_[a-z0-9_]+`)
	queried := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, m := range name.FindAllString(q.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				queried[base] = true
				if !exported[m] && !exported[base] {
					t.Errorf("panel %q queries %s, which a node does not export", p.Title, m)
				}
			}
		}
	}
	for _, m := range []string{"logd_consumer_group_lag", "logd_raft_follower_lag_entries", "logd_authz_denied_total"} {
		if !queried[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// dashboardMetrics is the /metrics text of nodes that together export
// what the dashboard shows: a single node with a produce and a group's
// committed consume, a node with --authz on that refused a request, and a
// 2-node cluster with a partition on both.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	single := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", "")
	srv := []string{"--server", single.addr}
	okBin(t, nil, "", append([]string{"topic", "create", "t"}, srv...)...)
	okBin(t, nil, "a\nb\n", append([]string{"produce", "t"}, srv...)...)
	okBin(t, nil, "", append([]string{"consume", "t", "--group", "g", "--commit", "--count", "1"}, srv...)...)

	// A refused request is counted on a node with --authz on; its /metrics
	// needs describe on the cluster: the bootstrap administrator, over TLS.
	ca := testcerts.NewCA(t, "logd")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	guarded := startBin(t, []string{"LOGD_TLS_CERT=" + cert, "LOGD_TLS_KEY=" + key, "LOGD_BOOTSTRAP_USER=admin:admin-pw"},
		"--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", "",
		"--auth", "optional", "--authz", "on", "--super-users", "User:admin")
	failBin(t, []string{"LOGD_TLS_CA=" + ca.File}, "", "may not create", "topic", "create", "refused", "--server", guarded.addr)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	req, err := http.NewRequest("GET", "https://"+guarded.http+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", "admin-pw")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics of the node with --authz on: %d %s %v", resp.StatusCode, body, err)
	}
	texts := []string{string(body)}

	raft := func() string {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	common := []string{"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", ""}
	n1 := startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n1", "--raft-addr", raft(), "--bootstrap")...)
	n2 := startBin(t, nil, append(common, "--data-dir", t.TempDir(), "--node-id", "n2", "--raft-addr", raft(), "--join", n1.addr)...)
	both := []string{"--server", n1.addr + "," + n2.addr, "--timeout", "60s"}
	okBin(t, nil, "", append([]string{"cluster", "wait", "--nodes", "2"}, both...)...)
	okBin(t, nil, "", append([]string{"topic", "create", "r", "--replicas", "2"}, both...)...)
	okBin(t, nil, "a\n", append([]string{"produce", "r"}, both...)...)
	// The leader measures its followers' lag every 5 s.
	var lag string
	eventually(t, 30*time.Second, "the partition's leader exports its follower's lag", func() bool {
		for _, n := range []*binNode{n1, n2} {
			if m := n.get(t, "/metrics"); strings.Contains(m, "logd_raft_follower_lag_entries{") {
				lag = m
				return true
			}
		}
		return false
	})
	return append(texts, single.get(t, "/metrics"), lag)
}

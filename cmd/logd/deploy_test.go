package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logd/logd/internal/logdbin"
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
// metrics a running node exports: after a produce and a consume, each
// logd_ name in its expressions is on /metrics (a histogram's _bucket,
// _sum and _count count as the histogram).
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
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--kafka-addr", "")
	srv := []string{"--server", n.addr}
	okBin(t, nil, "", append([]string{"topic", "create", "t"}, srv...)...)
	okBin(t, nil, "a\nb\n", append([]string{"produce", "t"}, srv...)...)
	okBin(t, nil, "", append([]string{"consume", "t"}, srv...)...)
	exported := map[string]bool{}
	for _, line := range strings.Split(n.get(t, "/metrics"), "\n") {
		if name, _, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " "); strings.HasPrefix(line, "# TYPE ") {
			exported[name] = true
		}
	}
	name := regexp.MustCompile(`\blogd_[a-z0-9_]+`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, m := range name.FindAllString(q.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !exported[m] && !exported[base] {
					t.Errorf("panel %q queries %s, which a node does not export", p.Title, m)
				}
			}
		}
	}
}

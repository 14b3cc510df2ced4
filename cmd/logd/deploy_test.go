package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logd/logd/internal/logdtest"
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
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/logd", logdtest.Binary(t))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify deploy/logd.service: %v\n%s", err, out)
	}
}

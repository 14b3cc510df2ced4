package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// logd version and logd --version print the same line, naming the Go
// version; --json has stable field names.
func TestBinVersion(t *testing.T) {
	line := okBin(t, nil, "", "version")
	if !strings.HasPrefix(line, "logd ") || !strings.Contains(line, "revision ") || !strings.Contains(line, runtime.Version()) {
		t.Fatalf("logd version: %q", line)
	}
	if flag := okBin(t, nil, "", "--version"); flag != line {
		t.Fatalf("logd --version %q, logd version %q", flag, line)
	}
	var in struct {
		Version   string `json:"version"`
		Revision  string `json:"revision"`
		Time      string `json:"time"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(okBin(t, nil, "", "version", "--json")), &in); err != nil {
		t.Fatal(err)
	}
	if in.Version == "" || in.Revision == "" || in.Time == "" || in.GoVersion != runtime.Version() {
		t.Fatalf("version --json: %+v", in)
	}
}

// /metrics carries logd_build_info = 1 with the labels logd version prints.
func TestBinBuildInfoMetric(t *testing.T) {
	var in struct{ Version, Revision string }
	okJSON(t, okBin(t, nil, "", "version", "--json"), &in)
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
	metrics := n.get(t, "/metrics")
	want := regexp.MustCompile(fmt.Sprintf(`(?m)^logd_build_info\{goversion="%s",revision="%s",version="%s"\} 1$`,
		regexp.QuoteMeta(runtime.Version()), regexp.QuoteMeta(in.Revision), regexp.QuoteMeta(in.Version)))
	if !want.MatchString(metrics) {
		t.Fatalf("no %s in /metrics:\n%s", want, grepLines(metrics, "build_info"))
	}
}

func okJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
}

// grepLines is the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

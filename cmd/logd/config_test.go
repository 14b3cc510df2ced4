package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// configLine finds `key = value  # source` in --print-config output.
func configLine(t *testing.T, out, key string) (value, source string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` = (.*?)\s+# (.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in --print-config:\n%s", key, out)
	}
	return m[1], m[2]
}

// A flag wins over LOGD_*, which wins over the --config file, which wins
// over the default; --print-config says which one gave each value.
func TestBinServeConfigPrecedence(t *testing.T) {
	file := writeFile(t, "logd.toml", `
data-dir = "/srv/logd"
fsync = "never"
retention-interval = "1m"
max-connections = 100
bootstrap = false
`)
	env := []string{"LOGD_FSYNC=100ms", "LOGD_RETENTION_INTERVAL=2m", "LOGD_HTTP_ADDR="}
	out := okBin(t, env, "", "serve", "--config", file, "--retention-interval", "5s", "--print-config")
	for _, want := range []struct{ key, value, source string }{
		{"data-dir", `"/srv/logd"`, "file " + file},
		{"fsync", `"100ms"`, "env LOGD_FSYNC"},
		{"retention-interval", `"5s"`, "flag"},
		{"max-connections", "100", "file " + file},
		{"http-addr", `""`, "env LOGD_HTTP_ADDR"},
		{"addr", `"127.0.0.1:7070"`, "default"},
	} {
		if v, src := configLine(t, out, want.key); v != want.value || src != want.source {
			t.Errorf("%s = %s (%s), want %s (%s)", want.key, v, src, want.value, want.source)
		}
	}
	if strings.Contains(out, "print-config") || strings.Contains(out, "config =") {
		t.Errorf("--print-config lists the command-line-only flags:\n%s", out)
	}
	// What --print-config prints is a file --config reads back, to the same values.
	again := okBin(t, nil, "", "serve", "--config", writeFile(t, "printed.toml", out), "--print-config")
	for _, key := range []string{"data-dir", "fsync", "retention-interval", "max-connections", "http-addr", "addr"} {
		v1, _ := configLine(t, out, key)
		if v2, _ := configLine(t, again, key); v1 != v2 {
			t.Errorf("%s: printed %s, read back %s", key, v1, v2)
		}
	}
	// LOGD_CONFIG names the file when --config does not.
	if v, _ := configLine(t, okBin(t, []string{"LOGD_CONFIG=" + file}, "", "serve", "--print-config"), "data-dir"); v != `"/srv/logd"` {
		t.Errorf("LOGD_CONFIG: data-dir %s", v)
	}
}

// A key the file does not know, a bad value, a table or a bad variable is
// one line naming it, and a non-zero exit.
func TestBinServeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        []string
		want       string
	}{
		{"unknown key", "datadir = \"x\"\n", nil, `unknown key "datadir"`},
		{"command-line only key", "print-config = true\n", nil, `unknown key "print-config"`},
		{"table", "[cluster]\nnode-id = \"n1\"\n", nil, `unknown key "cluster"`},
		{"bad value", "max-connections = \"lots\"\n", nil, `key "max-connections"`},
		{"not TOML", "data-dir = \n", nil, "config file"},
		{"bad variable", "", []string{"LOGD_RETENTION_INTERVAL=soon"}, "LOGD_RETENTION_INTERVAL"},
		// Values serve itself refuses are refused before they are printed.
		{"fsync serve refuses", "fsync = \"sometimes\"\n", nil, "--fsync"},
		{"kafka address serve refuses", "kafka-addr = \"nowhere\"\n", nil, "--kafka-addr nowhere is not HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := failBin(t, tc.env, "", tc.want, "serve", "--config", writeFile(t, "logd.toml", tc.file), "--print-config")
			t.Log(line)
		})
	}
	failBin(t, nil, "", "no such file", "serve", "--config", filepath.Join(t.TempDir(), "missing.toml"))
}

// The values from the file and the environment are the ones the node runs
// with, not only the ones printed.
func TestBinServeFromConfigFileAndEnv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-file")
	file := writeFile(t, "logd.toml", "data-dir = \""+dir+"\"\nhttp-addr = \"127.0.0.1:0\"\naddr = \"127.0.0.1:7070\"\n")
	n := startBin(t, []string{"LOGD_ADDR=127.0.0.1:0"}, "--config", file)
	if strings.HasSuffix(n.addr, ":7070") || n.http == "" {
		t.Fatalf("serving on %s (http %q): LOGD_ADDR did not win over the file", n.addr, n.http)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("data-dir from the file not used: %v\n%s", err, n.stderr())
	}
}

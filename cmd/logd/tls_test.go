package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/internal/server"
	"github.com/logd/logd/internal/testcerts"
)

// The CLI talks to a node that requires client certificates with --tls-*
// flags or LOGD_TLS_* variables; without them it says TLS is the problem.
func TestCLIMutualTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	dir := t.TempDir()
	cert, key := ca.Pair(t, dir, "node")
	c := startCLI(t, func(cfg *server.Config) {
		cfg.TLS = tlsconfig.ServerFiles{CertFile: cert, KeyFile: key, ClientCAFile: ca.File}
	})
	_, _, err := c.run("", "topic", "list")
	if err == nil || !strings.Contains(err.Error(), "probably serves TLS") || !strings.Contains(err.Error(), "--tls-ca") {
		t.Fatalf("plaintext CLI to a TLS node: %v; want a hint to give --tls-ca", err)
	}
	// Under TLS 1.3 the server refuses a missing client certificate after
	// the client's side of the handshake: the client sees the alert
	// ("tls: certificate required") or, when it writes first, a broken
	// pipe; either way it is refused.
	_, _, err = c.run("", "topic", "list", "--tls-ca", ca.File, "--timeout", "1s")
	if err == nil {
		t.Fatal("CLI without a client certificate was served by an mTLS node")
	}
	userCert, userKey := ca.Pair(t, dir, "alice")
	flags := []string{"--tls-ca", ca.File, "--tls-cert", userCert, "--tls-key", userKey}
	c.ok("", append([]string{"topic", "create", "sec", "--partitions", "1"}, flags...)...)
	c.ok("a\nb\n", append([]string{"produce", "sec"}, flags...)...)
	t.Setenv("LOGD_TLS_CA", ca.File)
	t.Setenv("LOGD_TLS_CERT", userCert)
	t.Setenv("LOGD_TLS_KEY", userKey)
	if out := c.ok("", "consume", "sec", "--count", "2"); out != "a\nb\n" {
		t.Fatalf("consume over TLS (LOGD_TLS_*): %q", out)
	}
}

// The serve flags, from the command line or a config file, turn TLS on for
// the API and for the node's calls to other nodes.
func TestServeTLSFlags(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	file := writeFile(t, "logd.toml", "tls-cert = \""+cert+"\"\ntls-key = \""+key+"\"\ntls-client-ca = \""+ca.File+"\"\n")
	var fl serveFlags
	cmd := &cobra.Command{}
	fl.register(cmd.Flags())
	if _, err := applyConfig(cmd.Flags(), file, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	cfg, err := fl.serverConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS.CertFile != cert || cfg.TLS.KeyFile != key || cfg.TLS.ClientCAFile != ca.File || cfg.PeerTLS == nil {
		t.Fatalf("config file TLS keys: TLS %+v, peer TLS set %v", cfg.TLS, cfg.PeerTLS != nil)
	}
	fl = serveFlags{}
	cmd = &cobra.Command{}
	fl.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--tls-client-ca", ca.File}); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.serverConfig(); err == nil || !strings.Contains(err.Error(), "need --tls-cert") {
		t.Fatalf("--tls-client-ca without --tls-cert: %v", err)
	}
	fl = serveFlags{}
	cmd = &cobra.Command{}
	fl.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--tls-cert", cert, "--tls-key", os.DevNull}); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.serverConfig(); err == nil || !strings.Contains(err.Error(), os.DevNull) {
		t.Fatalf("a key file that is no key: %v; want an error naming it", err)
	}
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/testcerts"
)

// The CLI talks to a node that requires client certificates with --tls-*
// flags or LOGD_TLS_* variables; without them it says TLS is the problem.
func TestCLIMutualTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	dir := t.TempDir()
	cert, key := ca.Pair(t, dir, "node")
	c := startCLI(t, func(cfg *node.Config) {
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
	cfg, err := fl.nodeConfig()
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
	if _, err := fl.nodeConfig(); err == nil || !strings.Contains(err.Error(), "need --tls-cert") {
		t.Fatalf("--tls-client-ca without --tls-cert: %v", err)
	}
	fl = serveFlags{}
	cmd = &cobra.Command{}
	fl.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--tls-cert", cert, "--tls-key", os.DevNull}); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.nodeConfig(); err == nil || !strings.Contains(err.Error(), os.DevNull) {
		t.Fatalf("a key file that is no key: %v; want an error naming it", err)
	}
}

// The binary serves TLS from LOGD_TLS_* and reloads its certificate on
// SIGHUP; a bad file on SIGHUP is logged and the old certificate serves on.
func TestBinServeTLSReloadOnSIGHUP(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	n := startBin(t, []string{"LOGD_TLS_CERT=" + cert, "LOGD_TLS_KEY=" + key},
		"--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "", "--kafka-addr", "")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if cn := peerCN(t, n.addr, roots); cn != "node" {
		t.Fatalf("serves CN %q, want node", cn)
	}
	c, k := ca.Leaf(t, "node-2")
	testcerts.WriteFile(t, key, k)
	testcerts.WriteFile(t, cert, c)
	n.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, n, "TLS files reloaded")
	if cn := peerCN(t, n.addr, roots); cn != "node-2" {
		t.Fatalf("after SIGHUP serves CN %q, want node-2", cn)
	}
	testcerts.WriteFile(t, key, []byte("not a key"))
	n.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, n, "TLS files do not load")
	if cn := peerCN(t, n.addr, roots); cn != "node-2" {
		t.Fatalf("after a bad rotation serves CN %q, want node-2 still", cn)
	}
}

func waitLog(t *testing.T, n *binNode, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(n.stderr(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", want, n.stderr())
		}
	}
}

// peerCN is the CN of the certificate served at addr.
func peerCN(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/logd/logd/internal/testcerts"
)

// --raft-tls-* come from the command line, LOGD_RAFT_TLS_* or the config
// file like every serve flag.
func TestServeRaftTLSFlags(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	cert, key := ca.Pair(t, t.TempDir(), "n1")
	file := writeFile(t, "logd.toml", "raft-tls-cert = \""+cert+"\"\nraft-tls-key = \""+key+"\"\n")
	var fl serveFlags
	cmd := &cobra.Command{}
	fl.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--node-id", "n1", "--raft-addr", "127.0.0.1:7000", "--bootstrap"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LOGD_RAFT_TLS_CA": ca.File}
	if _, err := applyConfig(cmd.Flags(), file, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	cfg, err := fl.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RaftTLS.CertFile != cert || cfg.RaftTLS.KeyFile != key || cfg.RaftTLS.CAFile != ca.File {
		t.Fatalf("Raft TLS files %+v, want the file's cert and key and the environment's CA", cfg.RaftTLS)
	}
}

// Raft TLS without cluster mode, or without the CA, is refused at start
// with a message naming the flags.
func TestBinRaftTLSNeedsClusterAndCA(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	cert, key := ca.Pair(t, t.TempDir(), "n1")
	base := []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "", "--kafka-addr", "",
		"--raft-tls-cert", cert, "--raft-tls-key", key}
	failBin(t, nil, "", "need cluster mode", base...)
	res := failBin(t, nil, "", "always mutual", append(base, "--node-id", "n1", "--raft-addr", "127.0.0.1:0", "--bootstrap")...)
	if !strings.Contains(res, "--raft-tls-ca") {
		t.Fatalf("the error does not name --raft-tls-ca: %s", res)
	}
}

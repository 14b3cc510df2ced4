package main

// Tests of the CLI's answers where an error used to send the user the wrong
// way, each against a real `logd serve` process.

import (
	"strings"
	"testing"

	"github.com/logd/logd/internal/testcerts"
)

// A CLI without a client certificate, against a node that requires one, is
// told so at once and does not retry: no certificate will appear.
func TestBinMissingClientCertificate(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	dir := t.TempDir()
	cert, key := ca.Pair(t, dir, "node")
	n := startBin(t, []string{"LOGD_TLS_CERT=" + cert, "LOGD_TLS_KEY=" + key, "LOGD_TLS_CLIENT_CA=" + ca.File},
		"--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "", "--kafka-addr", "")
	line := failBin(t, nil, "", "requires a client certificate", "topic", "list", "--server", n.addr, "--tls-ca", ca.File, "--timeout", "20s")
	if !strings.Contains(line, "--tls-cert") || strings.Contains(line, "retrying") {
		t.Fatalf("stderr %q: want the flags to give and no retries", line)
	}
	line = failBin(t, nil, "a\n", "requires a client certificate", "produce", "t", "--server", n.addr, "--tls-ca", ca.File, "--timeout", "20s")
	if strings.Contains(line, "retrying") || strings.Contains(line, "--timeout") {
		t.Fatalf("produce stderr %q: want no retries", line)
	}
}

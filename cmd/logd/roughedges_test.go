package main

// Tests of the CLI's answers where an error used to send the user the wrong
// way, each against a real `logd serve` process.

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/logdbin"
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

// The CLI pointed at a node's HTTP or Kafka port names the port's role and
// where the API is, rather than guessing TLS.
func TestBinWrongPort(t *testing.T) {
	var ports []string
	for range 2 {
		a, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, a)
	}
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", ports[0], "--kafka-addr", ports[1])
	for _, c := range []struct{ addr, want string }{
		{ports[0], "HTTP port"},
		{ports[1], "Kafka listener"},
	} {
		line := failBin(t, nil, "", c.want, "topic", "list", "--server", c.addr, "--timeout", "20s")
		if !strings.Contains(line, "--addr") || strings.Contains(line, "TLS") {
			t.Fatalf("stderr %q: want the node's --addr named and no TLS guess", line)
		}
	}
	// The Kafka listener names what it was sent, not a 1.3 GB frame.
	waitLog(t, n, "speaks HTTP/2")
	if strings.Contains(n.stderr(), "frame larger") {
		t.Fatalf("the Kafka listener logged a gRPC connection as a large frame:\n%s", n.stderr())
	}
}

// `produce --timeout` started while the only node restarts waits for it,
// as the flag promises, rather than giving up after client.StartupGrace.
func TestBinProduceWaitsForRestartingNode(t *testing.T) {
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--addr", addr, "--http-addr", "", "--kafka-addr", ""}
	n := startBin(t, nil, args...)
	okBin(t, nil, "", "topic", "create", "t", "--partitions", "1", "--server", addr)
	n.signal(syscall.SIGTERM)

	bin := logdbin.Binary(t)
	done := make(chan binResult, 1)
	go func() {
		done <- runBinNoFatal(bin, nil, "a\nb\n", "produce", "t", "--server", addr, "--timeout", "60s")
	}()
	// Longer than client.StartupGrace: the node is down when it passes.
	time.Sleep(client.StartupGrace + time.Second)
	startBin(t, nil, args...)
	if r := <-done; r.code != 0 {
		t.Fatalf("produce through a restart: exit %d: %s", r.code, r.stderr)
	}
	if out := okBin(t, nil, "", "consume", "t", "--count", "2", "--server", addr); out != "a\nb\n" {
		t.Fatalf("consumed %q", out)
	}
}

// runBinNoFatal is runBin for another goroutine than the test's: a failure
// to start is exit code -1.
func runBinNoFatal(bin string, env []string, stdin string, args ...string) binResult {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := binResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

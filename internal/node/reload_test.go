package node_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
)

// pemFileSize is the size every certificate and key file of
// TestReloadTLSReachesEveryListener is padded to (PEM readers skip the
// trailing newlines), so a rewrite keeps the file's size.
const pemFileSize = 4096

// writeUnnoticed writes b, padded to pemFileSize, into the file at path
// in place, and puts its modification time back: the file looks unchanged
// to the TLS files' watch (same file, size and time), so only an explicit
// reload reads it.
func writeUnnoticed(t *testing.T, path string, b []byte) {
	t.Helper()
	if len(b) > pemFileSize {
		t.Fatalf("%s: %d bytes, over %d", path, len(b), pemFileSize)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	padded := append(bytes.Clone(b), bytes.Repeat([]byte("\n"), pemFileSize-len(b))...)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(padded); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// One ReloadTLS (SIGHUP) reaches every listener the node serves TLS on:
// the gRPC API, the HTTP port, the Kafka listener and the Raft port. The
// files are rewritten so that the watch does not notice, so a listener
// the reload leaves out keeps serving the old certificate.
func TestReloadTLSReachesEveryListener(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	dir := t.TempDir()
	api := tlsconfig.ServerFiles{CertFile: filepath.Join(dir, "api.crt"), KeyFile: filepath.Join(dir, "api.key")}
	raftFiles := tlsconfig.RaftFiles{CertFile: filepath.Join(dir, "raft.crt"), KeyFile: filepath.Join(dir, "raft.key"), CAFile: ca.File}
	write := func(certFile, keyFile, cn string) {
		c, k := ca.Leaf(t, cn)
		writeUnnoticed(t, certFile, c)
		writeUnnoticed(t, keyFile, k)
	}
	for _, f := range []string{api.CertFile, api.KeyFile, raftFiles.CertFile, raftFiles.KeyFile} {
		testcerts.WriteFile(t, f, nil)
	}
	write(api.CertFile, api.KeyFile, "api-1")
	write(raftFiles.CertFile, raftFiles.KeyFile, "raft-1")
	cl := nodetest.NewCluster(t, 1, func(cfg *node.Config) {
		cfg.TLS, cfg.RaftTLS = api, raftFiles
		cfg.HTTPAddr, cfg.KafkaAddr = "127.0.0.1:0", "127.0.0.1:0"
	})
	n := cl.Nodes()[0]
	s := n.Server()
	peer, peerKey := ca.Pair(t, t.TempDir(), "peer")
	pair, err := tls.LoadX509KeyPair(peer, peerKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	listeners := map[string]string{"gRPC API": s.Addr(), "HTTP port": s.HTTPAddr(), "Kafka listener": s.KafkaAddr(), "Raft port": n.RaftAddr}
	check := func(when, apiCN, raftCN string) {
		t.Helper()
		for name, addr := range listeners {
			want := apiCN
			if name == "Raft port" {
				want = raftCN
			}
			if got := servedCNWith(t, addr, roots, pair); got != want {
				t.Errorf("%s: the %s (%s) serves CN %q, want %q", when, name, addr, got, want)
			}
		}
	}
	check("at start", "api-1", "raft-1")
	write(api.CertFile, api.KeyFile, "api-2")
	write(raftFiles.CertFile, raftFiles.KeyFile, "raft-2")
	check("rewritten, before ReloadTLS", "api-1", "raft-1") // the watch did not notice
	if err := s.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	check("after ReloadTLS", "api-2", "raft-2")
}

// servedCNWith is the CN of the certificate the TLS listener at addr
// serves, presenting pair (the Raft port wants one).
func servedCNWith(t *testing.T, addr string, roots *x509.CertPool, pair tls.Certificate) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

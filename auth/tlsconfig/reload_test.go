package tlsconfig

import (
	"crypto/tls"
	"errors"
	"sync"
	"testing"

	"github.com/logd/logd/internal/testcerts"
)

// errorLog collects OnReloadError reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) report(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

func TestServerTLSPicksUpRotatedFilesOnNextHandshake(t *testing.T) {
	p := newPKI(t, "main")
	var reports errorLog
	st, err := NewServer(ServerFiles{CertFile: p.srvCert, KeyFile: p.srvKey, OnReloadError: reports.report})
	if err != nil {
		t.Fatal(err)
	}
	s := serveTLS(t, st.TLSConfig())
	client := p.client(t, false)
	expectServerCN(t, s.addr, client, "server")

	c, k := p.ca.Leaf(t, "server-rotated")
	testcerts.WritePair(t, p.dir, "server", c, k)
	expectServerCN(t, s.addr, client, "server-rotated")

	// A rotation that leaves a broken key behind keeps the working pair and
	// says so once, not once per handshake.
	testcerts.WriteFile(t, p.srvKey, []byte("not a key"))
	expectServerCN(t, s.addr, client, "server-rotated")
	expectServerCN(t, s.addr, client, "server-rotated")
	if reports.count() != 1 {
		t.Fatalf("%d reload errors reported, want 1", reports.count())
	}
	if err := st.Reload(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reload of a broken key: %v, want ErrInvalid", err)
	}
	expectServerCN(t, s.addr, client, "server-rotated")

	// The key is fixed: the next handshake uses the new pair.
	c, k = p.ca.Leaf(t, "server-fixed")
	testcerts.WritePair(t, p.dir, "server", c, k)
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	expectServerCN(t, s.addr, client, "server-fixed")
}

func TestServerTLSPicksUpRotatedClientCA(t *testing.T) {
	p, next := newPKI(t, "main"), newPKI(t, "next")
	s := serveTLS(t, p.serverTLS(t, true).TLSConfig())
	if _, _, err := exchange(s.addr, tlsClientWithPair(t, p.caFile, readFile(t, next.aliceCert), readFile(t, next.aliceKey))); err == nil {
		t.Fatal("a client of the next CA was served before the CA file changed")
	}
	testcerts.WriteFile(t, p.caFile, append(append([]byte{}, p.ca.PEM...), next.ca.PEM...))
	line, _, err := exchange(s.addr, tlsClientWithPair(t, p.caFile, readFile(t, next.aliceCert), readFile(t, next.aliceKey)))
	if err != nil || line != "User:alice" {
		t.Fatalf("after the CA bundle gained the next CA: %q, %v", line, err)
	}
}

func TestClientTLSPicksUpRotatedCertificate(t *testing.T) {
	p := newPKI(t, "main")
	s := serveTLS(t, p.serverTLS(t, true).TLSConfig())
	client := p.client(t, true)
	if line, _, err := exchange(s.addr, client); err != nil || line != "User:alice" {
		t.Fatalf("%q, %v", line, err)
	}
	c, k := p.ca.Leaf(t, "alice2")
	testcerts.WritePair(t, p.dir, "alice", c, k)
	if line, _, err := exchange(s.addr, client); err != nil || line != "User:alice2" {
		t.Fatalf("after rotation: %q, %v", line, err)
	}
}

func TestTLSConfigErrorsNameTheFile(t *testing.T) {
	p := newPKI(t, "main")
	cases := []struct {
		name string
		new  func() error
		want string
	}{
		{"missing key", func() error { _, err := NewServer(ServerFiles{CertFile: p.srvCert}); return err }, "key file"},
		{"missing CA file", func() error {
			_, err := NewServer(ServerFiles{CertFile: p.srvCert, KeyFile: p.srvKey, ClientCAFile: p.dir + "/nope.crt"})
			return err
		}, "nope.crt"},
		{"CA file without certificates", func() error { _, err := NewClient(ClientFiles{CAFile: p.srvKey}); return err }, "holds no PEM certificate"},
		{"mismatched pair", func() error {
			_, err := NewServer(ServerFiles{CertFile: p.srvCert, KeyFile: p.aliceKey})
			return err
		}, "server.crt"},
		{"Raft without CA", func() error { _, err := NewRaft(RaftFiles{CertFile: p.srvCert, KeyFile: p.srvKey}); return err }, "--raft-tls-ca"},
	}
	for _, tc := range cases {
		err := tc.new()
		if !errors.Is(err, ErrInvalid) || !contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", tc.name, err, tc.want)
		}
	}
}

func expectServerCN(t *testing.T, addr string, cfg *tls.Config, want string) {
	t.Helper()
	_, cn, err := exchange(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cn != want {
		t.Fatalf("server certificate CN %q, want %q", cn, want)
	}
}

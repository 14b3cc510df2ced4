package tlsconfig

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/testcerts"
)

// tlsServer accepts on 127.0.0.1 with cfg and answers each connection whose
// handshake succeeds with one line: the client certificate's principal, or
// "-" without one. Handshake errors are collected.
type tlsServer struct {
	addr string
	mu   sync.Mutex
	errs []error
}

func serveTLS(t *testing.T, cfg *tls.Config) *tlsServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.answer(tls.Server(c, cfg)) }()
		}
	}()
	return s
}

func (s *tlsServer) answer(c *tls.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.Handshake(); err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		return
	}
	name := "-"
	if p, ok := auth.CertificatePrincipal(c.ConnectionState()); ok {
		name = p.String()
	}
	_, _ = c.Write([]byte(name + "\n"))
}

func (s *tlsServer) handshakeErrors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs)
}

// exchange dials with cfg and reads the server's line. With TLS 1.3 a
// refused client certificate shows on the first read, not in Dial, so a
// test of refusal looks at both.
func exchange(addr string, cfg *tls.Config) (line string, serverCN string, err error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err = bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(line), c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// pki is one CA with a server pair and a client pair on disk.
type pki struct {
	ca                  *testcerts.CA
	dir, caFile         string
	srvCert, srvKey     string
	aliceCert, aliceKey string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, name+"-ca")
	p := &pki{ca: ca, dir: dir, caFile: ca.File}
	c, k := p.ca.Leaf(t, "server")
	p.srvCert, p.srvKey = testcerts.WritePair(t, dir, "server", c, k)
	c, k = p.ca.Leaf(t, "alice")
	p.aliceCert, p.aliceKey = testcerts.WritePair(t, dir, "alice", c, k)
	return p
}

func (p *pki) serverTLS(t *testing.T, mutual bool) *Server {
	t.Helper()
	c := ServerFiles{CertFile: p.srvCert, KeyFile: p.srvKey}
	if mutual {
		c.ClientCAFile = p.caFile
	}
	s, err := NewServer(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *pki) client(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	c := ClientFiles{CAFile: p.caFile}
	if withCert {
		c.CertFile, c.KeyFile = p.aliceCert, p.aliceKey
	}
	cfg, err := NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestServerTLSServesTrustedClients(t *testing.T) {
	p := newPKI(t, "main")
	for _, mutual := range []bool{false, true} {
		s := serveTLS(t, p.serverTLS(t, mutual).TLSConfig())
		line, cn, err := exchange(s.addr, p.client(t, true))
		if err != nil {
			t.Fatalf("mutual=%v: %v", mutual, err)
		}
		want := "-" // without a client CA a certificate is not verified, so it names no one
		if mutual {
			want = "User:alice"
		}
		if line != want || cn != "server" {
			t.Errorf("mutual=%v: principal %q, server CN %q; want %q, server", mutual, line, cn, want)
		}
	}
}

func TestServerTLSRefusesPlaintextClient(t *testing.T) {
	p := newPKI(t, "main")
	s := serveTLS(t, p.serverTLS(t, false).TLSConfig())
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := bufio.NewReader(c).ReadString('\n')
	if strings.Contains(got, "-") || strings.Contains(got, "User:") {
		t.Fatalf("a plaintext client got an answer: %q", got)
	}
	waitFor(t, func() bool { return s.handshakeErrors() == 1 })
}

func TestServerTLSRefusesClients(t *testing.T) {
	p, other := newPKI(t, "main"), newPKI(t, "other")
	expiredCert, expiredKey := p.ca.LeafValid(t, "old", time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	expired := tlsClientWithPair(t, p.caFile, expiredCert, expiredKey)
	tls11 := p.client(t, true)
	tls11.MaxVersion = tls.VersionTLS11
	cases := []struct {
		name   string
		mutual bool
		client *tls.Config
	}{
		{"client trusting another CA", false, other.client(t, false)},
		{"client below TLS 1.2", false, tls11},
		{"no client certificate under mTLS", true, p.client(t, false)},
		{"client certificate from another CA", true, tlsClientWithPair(t, p.caFile, readFile(t, other.aliceCert), readFile(t, other.aliceKey))},
		{"expired client certificate", true, expired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serveTLS(t, p.serverTLS(t, tc.mutual).TLSConfig())
			if line, _, err := exchange(s.addr, tc.client); err == nil {
				t.Fatalf("served: %q", line)
			}
			waitFor(t, func() bool { return s.handshakeErrors() == 1 })
		})
	}
}

// tlsClientWithPair is a client config presenting a certificate given as
// PEM (written to files, loaded as a client would).
func tlsClientWithPair(t *testing.T, caFile string, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	cf, kf := testcerts.WritePair(t, t.TempDir(), "client", certPEM, keyPEM)
	// loadKeyPair refuses an expired certificate, as a client should; a
	// test of the server side builds the config by hand.
	pair, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := loadCAPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
}

func TestServerTLSNegotiatesNextProtos(t *testing.T) {
	p := newPKI(t, "main")
	s := serveTLS(t, p.serverTLS(t, false).TLSConfig("h2"))
	cfg := p.client(t, false)
	cfg.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("negotiated %q, want h2 (gRPC clients insist on it)", got)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

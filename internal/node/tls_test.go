package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
)

// tlsNode starts a node serving TLS with a certificate from ca (mutual
// when clientCA is set) and returns it with its certificate files.
func tlsNode(t *testing.T, ca *testcerts.CA, clientCA string) (s *node.Node, certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = ca.Pair(t, t.TempDir(), "node")
	s = nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: clientCA}
	})
	return s, certFile, keyFile
}

// produceConsume creates topic, produces one record and reads it back.
func produceConsume(t *testing.T, c *client.Client, topic string) {
	t.Helper()
	ctx := ctx(t)
	if _, err := c.Admin().CreateTopic(ctx, topic, client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatalf("create topic over TLS: %v", err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	if _, err := p.Produce(ctx, client.Record{Topic: topic, Value: []byte("secret")}).Get(ctx); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	p.Close()
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	recs, err := cons.Poll(ctx)
	if err != nil {
		t.Fatalf("consume over TLS: %v", err)
	}
	if len(recs) != 1 || string(recs[0].Value) != "secret" {
		t.Fatalf("consumed %+v, want the one record produced", recs)
	}
}

func TestTLSProduceConsume(t *testing.T) {
	ca := testcerts.NewCA(t, "api")
	s, _, _ := tlsNode(t, ca, "")
	if !s.TLSEnabled() {
		t.Fatal("TLSEnabled is false on a node given a certificate")
	}
	produceConsume(t, nodetest.TLSClient(t, s.Addr(), ca.File, "", ""), "tls")
}

func TestTLSRefusesPlaintextAndOtherCA(t *testing.T) {
	ca := testcerts.NewCA(t, "api")
	s, _, _ := tlsNode(t, ca, "")
	plain, err := client.Dial(s.Addr(), client.WithRetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, err = plain.Admin().ListTopics(ctx(t))
	if err == nil {
		t.Fatal("a plaintext client listed the topics of a TLS node")
	}
	if !strings.Contains(err.Error(), "TLS") {
		t.Errorf("plaintext client to a TLS node: %v; want an error that says TLS", err)
	}
	other := testcerts.NewCA(t, "other")
	_, err = nodetest.TLSClient(t, s.Addr(), other.File, "", "").Admin().ListTopics(ctx(t))
	var uerr x509.UnknownAuthorityError
	if err == nil || !(errors.As(err, &uerr) || strings.Contains(err.Error(), "certificate signed by unknown authority")) {
		t.Fatalf("a client trusting another CA: %v; want an unknown-authority error", err)
	}
}

func TestMutualTLS(t *testing.T) {
	serverCA, clientCA := testcerts.NewCA(t, "api"), testcerts.NewCA(t, "clients")
	s, _, _ := tlsNode(t, serverCA, clientCA.File)
	_, err := nodetest.TLSClient(t, s.Addr(), serverCA.File, "", "").Admin().ListTopics(ctx(t))
	if err == nil {
		t.Fatal("a client without a certificate was served under --tls-client-ca")
	}
	dir := t.TempDir()
	cert, key := serverCA.Pair(t, dir, "stranger") // not from the client CA
	if _, err := nodetest.TLSClient(t, s.Addr(), serverCA.File, cert, key).Admin().ListTopics(ctx(t)); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	cert, key = clientCA.Pair(t, dir, "alice")
	produceConsume(t, nodetest.TLSClient(t, s.Addr(), serverCA.File, cert, key), "mtls")
}

// servedCN is the CN of the certificate the node at addr presents now.
func servedCN(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestTLSRotationWithoutRestart(t *testing.T) {
	ca := testcerts.NewCA(t, "api")
	s, certFile, keyFile := tlsNode(t, ca, "")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if cn := servedCN(t, s.Addr(), roots); cn != "node" {
		t.Fatalf("served CN %q, want node", cn)
	}
	c, k := ca.Leaf(t, "node-rotated")
	testcerts.WriteFile(t, keyFile, k)
	testcerts.WriteFile(t, certFile, c)
	if err := s.ReloadTLS(); err != nil { // SIGHUP; the next handshake would also notice
		t.Fatal(err)
	}
	if cn := servedCN(t, s.Addr(), roots); cn != "node-rotated" {
		t.Fatalf("after rotation the node serves CN %q, want node-rotated", cn)
	}
	produceConsume(t, nodetest.TLSClient(t, s.Addr(), ca.File, "", ""), "rotated")
}

func TestTLSBadFilesFailStart(t *testing.T) {
	_, err := node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0", TLS: tlsconfig.ServerFiles{CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key"}})
	if err == nil || !strings.Contains(err.Error(), "nonexistent.crt") {
		t.Fatalf("start with a missing certificate: %v; want an error naming the file", err)
	}
	_, err = node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0", TLS: tlsconfig.ServerFiles{ClientCAFile: "/ca.crt"}})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("start with only a client CA: %v; want an error asking for --tls-cert", err)
	}
}

// TestClusterOverMutualTLS: nodes that serve mutual TLS join each other and
// forward requests over it, with the same client TLS as any client.
func TestClusterOverMutualTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	dir := t.TempDir()
	cert, key := ca.Pair(t, dir, "node")
	peer, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	cl := nodetest.NewCluster(t, 2, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: cert, KeyFile: key, ClientCAFile: ca.File}
		c.PeerTLS = peer
	})
	userCert, userKey := ca.Pair(t, dir, "alice")
	// Whichever node leads the metadata, one of the two forwards the
	// create to the other.
	for i, addr := range cl.Addrs() {
		c := nodetest.TLSClient(t, addr, ca.File, userCert, userKey)
		if _, err := c.Admin().CreateTopic(ctx(t), fmt.Sprintf("t%d", i), client.TopicOptions{Partitions: 1}); err != nil {
			t.Fatalf("create topic through %s: %v", addr, err)
		}
	}
}

// The HTTP port serves the API's TLS: a client trusting the CA gets
// /healthz, a plaintext request gets no answer.
func TestTLSOnHTTPPort(t *testing.T) {
	ca := testcerts.NewCA(t, "api")
	cert, key := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.TLS = tlsconfig.ServerFiles{CertFile: cert, KeyFile: key}
	})
	tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + s.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz over TLS: %s", resp.Status)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + s.HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plaintext GET /healthz was served by a TLS node")
		}
	}
}

package node_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/freeport"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/transport"
)

// raftTLS gives each node of a test cluster its own certificate from ca.
func raftTLS(t *testing.T, ca *testcerts.CA) func(*node.Config) {
	dir := t.TempDir()
	return func(c *node.Config) {
		cert, key := ca.Pair(t, dir, c.Cluster.NodeID)
		c.RaftTLS = tlsconfig.RaftFiles{CertFile: cert, KeyFile: key, CAFile: ca.File}
	}
}

// syncBuffer is a log destination a test reads while the node writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A cluster whose Raft port is under mutual TLS replicates and elects; a
// node with a certificate from another CA, or without Raft TLS, cannot
// join, and its Raft connections are refused, while the cluster keeps
// committing.
func TestRaftMutualTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	cl := nodetest.NewCluster(t, 3, raftTLS(t, ca))
	nodes := cl.Nodes()
	if !nodes[0].Server().TLSEnabled() {
		t.Fatal("TLSEnabled is false on a node with Raft TLS")
	}
	admin := nodetest.ClusterClient(t, cl)
	if _, err := admin.Admin().CreateTopic(ctx(t), "raft-tls", client.TopicOptions{Partitions: 1, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if got := nodetest.ProduceAll(t, cl.Addrs(), "raft-tls", "a", "b"); strings.Join(got, ",") != "a,b" {
		t.Fatalf("read %q, want a,b", got)
	}
	// The first node led the metadata group; the others elect a new leader
	// over TLS and keep committing.
	nodes[0].Stop()
	rest := []string{nodes[1].APIAddr, nodes[2].APIAddr}
	if got := nodetest.ProduceAll(t, rest, "raft-tls", "c"); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("after the first node stopped: read %q, want a,b,c", got)
	}

	other := testcerts.NewCA(t, "other")
	wrongCA := raftTLS(t, other)
	for _, tc := range []struct {
		name   string
		mutate func(*node.Config)
	}{{"another CA", wrongCA}, {"no Raft TLS", func(*node.Config) {}}} {
		t.Run(tc.name, func(t *testing.T) {
			log := startRogue(t, rest[0], tc.mutate)
			deadline := time.Now().Add(30 * time.Second)
			// It cannot even ask: the hello that learns the cluster's id
			// before a join goes over the Raft port, and fails.
			for !strings.Contains(log.String(), "joining the cluster: retrying") || !strings.Contains(log.String(), "transport: hello to") {
				if time.Now().After(deadline) {
					t.Fatalf("the rogue node's join was not refused; its log:\n%s", log.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if m := nodes[1].Server().ClusterMembers(); len(m) != 3 {
				t.Fatalf("members %v after the rogue node tried to join, want the 3 nodes", m)
			}
		})
	}

	raftAddr := nodes[1].RaftAddr
	if err := rawRaftDial(t, raftAddr, nil); err == nil {
		t.Error("a plaintext Raft connection was accepted")
	}
	rogueCert, rogueKey := other.Pair(t, t.TempDir(), "rogue")
	pair, err := tls.LoadX509KeyPair(rogueCert, rogueKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	// The rogue trusts the cluster's CA, so only the node's check of the
	// client certificate can refuse it; it presents its certificate even
	// though the node asks for the cluster CA's.
	var present *tls.Certificate = &pair
	rogue := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return present, nil }}
	if err := rawRaftDial(t, raftAddr, rogue); err == nil {
		t.Error("a Raft connection with a certificate from another CA was accepted")
	}
	good, goodKey := ca.Pair(t, t.TempDir(), "good")
	pair, err = tls.LoadX509KeyPair(good, goodKey)
	if err != nil {
		t.Fatal(err)
	}
	present = &pair
	if err := rawRaftDial(t, raftAddr, rogue); err != nil {
		t.Errorf("a Raft connection with a certificate from the cluster CA was refused: %v", err)
	}
	if got := nodetest.ProduceAll(t, rest, "raft-tls", "d"); strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("after the rogue nodes: read %q, want a,b,c,d", got)
	}
}

// startRogue starts a node that tries to join through api; it returns the
// node's log.
func startRogue(t *testing.T, api string, mutate func(*node.Config)) *syncBuffer {
	t.Helper()
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = freeport.Addr(); err != nil {
			t.Fatal(err)
		}
	}
	log := &syncBuffer{}
	cfg := node.Config{Config: broker.Config{DataDir: filepath.Join(t.TempDir(), "rogue"), Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), Cluster: &node.ClusterConfig{NodeID: "rogue", RaftAddr: addrs[1], Join: api, Raft: nodetest.RaftConfig()}}, Addr: addrs[0]}
	mutate(&cfg)
	s, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return log
}

// rawRaftDial opens a connection for the metadata group to the Raft port
// at addr the way a node's transport does, over TLS with tc (nil:
// plaintext), and returns the transport's verdict.
func rawRaftDial(t *testing.T, addr string, tc *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux, err := transport.New(transport.Config{Listener: ln, Dial: func(ctx context.Context, a string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil || tc == nil {
			return c, err
		}
		cfg := tc.Clone()
		cfg.ServerName = "127.0.0.1"
		tlc := tls.Client(c, cfg)
		if err := tlc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("handshake: %w", err)
		}
		return tlc, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	g, err := mux.Group(replication.MetaGroup)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// The Raft port serves a rotated certificate once its files change (and on
// ReloadTLS, SIGHUP).
func TestRaftTLSRotation(t *testing.T) {
	ca := testcerts.NewCA(t, "cluster")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	c, k := ca.Leaf(t, "node-1")
	testcerts.WriteFile(t, cert, c)
	testcerts.WriteFile(t, key, k)
	cl := nodetest.NewCluster(t, 1, func(cfg *node.Config) {
		cfg.RaftTLS = tlsconfig.RaftFiles{CertFile: cert, KeyFile: key, CAFile: ca.File}
	})
	n := cl.Nodes()[0]
	peer, peerKey := ca.Pair(t, t.TempDir(), "peer")
	pair, err := tls.LoadX509KeyPair(peer, peerKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	cn := func() string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.RaftAddr,
			&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := cn(); got != "node-1" {
		t.Fatalf("Raft port serves CN %q, want node-1", got)
	}
	c, k = ca.Leaf(t, "node-2")
	testcerts.WriteFile(t, key, k)
	testcerts.WriteFile(t, cert, c)
	if err := n.Server().ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if got := cn(); got != "node-2" {
		t.Fatalf("after rotation the Raft port serves CN %q, want node-2", got)
	}
	testcerts.WriteFile(t, key, []byte("not a key"))
	if err := n.Server().ReloadTLS(); err == nil {
		t.Fatal("ReloadTLS of a broken key file returned no error")
	}
	if got := cn(); got != "node-2" {
		t.Fatalf("after a bad rotation the Raft port serves CN %q, want node-2 still", got)
	}
}

package tlsconfig

import (
	"crypto/tls"
	"testing"
)

func newRaftTLS(t *testing.T, p *pki, certFile, keyFile string) *Raft {
	t.Helper()
	r, err := NewRaft(RaftFiles{CertFile: certFile, KeyFile: keyFile, CAFile: p.caFile})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dialRaft connects like a Raft transport: ClientConfig per dial.
func dialRaft(addr string, cfg *tls.Config) error {
	_, _, err := exchange(addr, cfg)
	return err
}

func TestRaftTLSIsAlwaysMutual(t *testing.T) {
	cluster, intruder := newPKI(t, "cluster"), newPKI(t, "intruder")
	node1 := newRaftTLS(t, cluster, cluster.srvCert, cluster.srvKey)
	node2 := newRaftTLS(t, cluster, cluster.aliceCert, cluster.aliceKey)
	s := serveTLS(t, node1.ServerConfig())

	if err := dialRaft(s.addr, node2.ClientConfig("127.0.0.1")); err != nil {
		t.Fatalf("a node of the cluster CA could not connect: %v", err)
	}

	// A node whose certificate another CA signed cannot connect...
	outsider := newRaftTLS(t, intruder, intruder.srvCert, intruder.srvKey)
	if err := dialRaft(s.addr, outsider.ClientConfig("127.0.0.1")); err == nil {
		t.Fatal("a node of another CA connected")
	}
	// ...even trusting the cluster CA...
	forged := tlsClientWithPair(t, cluster.caFile, readFile(t, intruder.srvCert), readFile(t, intruder.srvKey))
	if err := dialRaft(s.addr, forged); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	// ...nor without any certificate...
	bare, err := NewClient(ClientFiles{CAFile: cluster.caFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := dialRaft(s.addr, bare); err == nil {
		t.Fatal("a peer without a certificate connected")
	}
	// ...and a cluster node will not talk to its listener either.
	fake := serveTLS(t, outsider.ServerConfig())
	if err := dialRaft(fake.addr, node2.ClientConfig("127.0.0.1")); err == nil {
		t.Fatal("a cluster node connected to a listener of another CA")
	}
	waitFor(t, func() bool { return s.handshakeErrors() == 3 })
}

func TestRaftTLSChecksThePeerName(t *testing.T) {
	cluster := newPKI(t, "cluster")
	node := newRaftTLS(t, cluster, cluster.srvCert, cluster.srvKey)
	s := serveTLS(t, node.ServerConfig())
	if err := dialRaft(s.addr, node.ClientConfig("node7.example")); err == nil {
		t.Fatal("connected to a peer whose certificate does not name the address dialled")
	}
	if err := dialRaft(s.addr, node.ClientConfig("localhost")); err != nil {
		t.Fatal(err)
	}
}

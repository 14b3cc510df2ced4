package main

import (
	"context"
	"crypto/x509"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/internal/testcerts"
)

// The Kafka listener serves the API's TLS files (--tls-cert, --tls-key,
// --tls-client-ca): a kgo client with a certificate from the CA produces, a
// plaintext one is refused, and a rotated certificate is served after
// SIGHUP.
func TestBinKafkaTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	dir := t.TempDir()
	cert, key := ca.Pair(t, dir, "node")
	n := startBin(t, nil, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "",
		"--kafka-addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca.File)
	kafkaAddr := kafkaListener(t, n)
	userCert, userKey := ca.Pair(t, dir, "alice")
	clientTLS, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: userCert, KeyFile: userKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DialTLSConfig(clientTLS), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "tls"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tls", Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	plain, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := kadm.NewClient(plain).ListTopics(pctx); err == nil {
		t.Fatal("a plaintext Kafka client was served by a TLS listener")
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if cn := peerCN(t, kafkaAddr, roots); cn != "node" {
		t.Fatalf("Kafka listener serves CN %q, want node", cn)
	}
	c, k := ca.Leaf(t, "node-2")
	testcerts.WriteFile(t, key, k)
	testcerts.WriteFile(t, cert, c)
	n.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, n, "TLS files reloaded")
	if cn := peerCN(t, kafkaAddr, roots); cn != "node-2" {
		t.Fatalf("after SIGHUP the Kafka listener serves CN %q, want node-2", cn)
	}
}

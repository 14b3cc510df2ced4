package server_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A native produce that names a transactional id needs WRITE on it, as
// Kafka's produce does: a principal that may write the topic but not the
// id is refused (PERMISSION_DENIED naming the principal, the operation
// and the id) and nothing is stored; allowed the id, the same batch is.
func TestNativeTransactionalProduceRefusedPrincipal(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	certFile, keyFile := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File}
		secured(c)
	})
	dir := t.TempDir()
	conn := func(name string) *grpc.ClientConn {
		t.Helper()
		cert, key := ca.Pair(t, dir, name)
		tc, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: ca.File, CertFile: cert, KeyFile: key})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	adminCert, adminKey := ca.Pair(t, dir, "admin")
	admin := nodetest.TLSClient(t, s.Addr(), ca.File, adminCert, adminKey)
	ctx := ctx(t)
	if _, err := admin.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	// The transaction is the admin's, with t/0 added: only bob's right on
	// the id stands between his batch and the log.
	txc := pb.NewTransactionsClient(conn("admin"))
	init, err := txc.InitProducer(ctx, &pb.TxnInitRequest{TransactionalId: "tx-b"})
	if err != nil {
		t.Fatal(err)
	}
	prod := &pb.TxnProducer{TransactionalId: "tx-b", ProducerId: init.ProducerId, Epoch: init.Epoch}
	if _, err := txc.AddPartitions(ctx, &pb.TxnAddPartitionsRequest{Producer: prod, Partitions: []*pb.TxnPartition{{Topic: "t"}}}); err != nil {
		t.Fatal(err)
	}
	allow := func(op, typ, name string) {
		t.Helper()
		if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:bob", Permission: "allow", Operation: op,
			ResourceType: typ, Pattern: "literal", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	allow("write", "topic", "t")
	allow("describe", "topic", "t")
	bob := pb.NewLogClient(conn("bob"))
	part := int32(0)
	b := batch.EncodeTransactional(nil, batch.Producer{ID: init.ProducerId, Epoch: int16(init.Epoch)}, []batch.Record{{Timestamp: 1, Value: []byte("v")}})
	req := &pb.ProduceRequest{Topic: "t", Partition: &part, Batch: b, TransactionalId: "tx-b"}
	_, err = bob.Produce(ctx, req)
	wantDenied(t, "a transactional batch without write on its transactional id", err, "User:bob", "write", "tx-b")
	offs, err := admin.Admin().ListOffsetsIsolated(ctx, "t", nil, client.Latest(), client.ReadUncommitted)
	if err != nil || len(offs) != 1 || offs[0].HighWatermark != 0 {
		t.Fatalf("t/0 after the refused batch: %+v %v, want nothing stored", offs, err)
	}

	allow("write", "transactional-id", "tx-b")
	if _, err := bob.Produce(ctx, req); err != nil {
		t.Fatalf("the batch with write on its transactional id: %v", err)
	}
	offs, err = admin.Admin().ListOffsetsIsolated(ctx, "t", nil, client.Latest(), client.ReadUncommitted)
	if err != nil || len(offs) != 1 || offs[0].HighWatermark != 1 {
		t.Fatalf("t/0 after the allowed batch: %+v %v, want the batch stored", offs, err)
	}
}

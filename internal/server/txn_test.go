package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/internal/testcerts"
	pb "github.com/logd/logd/proto/logd/v1"
)

// wantClientDenied: err is the client's PERMISSION_DENIED naming words.
func wantClientDenied(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("%s: %v, want ErrPermissionDenied", what, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %q does not name %q", what, err, w)
		}
	}
}

// The Transactions service authorizes as Kafka's transaction APIs do:
// WRITE on the transactional id (init, and every later call), WRITE on
// each topic added, READ on the group whose offsets are sent; a
// principal refused any of them commits nothing.
func TestTxnRefusedPrincipal(t *testing.T) {
	ca := testcerts.NewCA(t, "logd")
	certFile, keyFile := ca.Pair(t, t.TempDir(), "node")
	s := nodetest.Start(t, func(c *node.Config) {
		c.TLS = tlsconfig.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File}
		secured(c)
	})
	dir := t.TempDir()
	adminCert, adminKey := ca.Pair(t, dir, "admin")
	admin := nodetest.TLSClient(t, s.Addr(), ca.File, adminCert, adminKey)
	aliceCert, aliceKey := ca.Pair(t, dir, "alice")
	alice := nodetest.TLSClient(t, s.Addr(), ca.File, aliceCert, aliceKey)
	ctx := ctx(t)
	if _, err := admin.Admin().CreateTopic(ctx, "t", client.TopicOptions{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	allow := func(op, typ, name string) {
		t.Helper()
		if err := admin.Admin().AddACLs(ctx, client.ACL{Principal: "User:alice", Permission: "allow", Operation: op,
			ResourceType: typ, Pattern: "literal", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := alice.NewTransactionalProducer(ctx, "tx-a", client.TransactionalOptions{})
	wantClientDenied(t, "init without write on the transactional id", err, "User:alice", "write", "tx-a")

	allow("write", "transactional-id", "tx-a")
	p, err := alice.NewTransactionalProducer(ctx, "tx-a", client.TransactionalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	allow("describe", "topic", "t")
	run := func(offsets bool) error {
		tx, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Produce(ctx, client.Record{Topic: "t", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Flush(ctx); err != nil {
			return errors.Join(err, tx.Abort(ctx))
		}
		if offsets {
			if err := tx.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "t", Offset: 1}}); err != nil {
				return errors.Join(err, tx.Abort(ctx))
			}
		}
		return tx.Commit(ctx)
	}
	wantClientDenied(t, "a partition without write on its topic", run(false), "User:alice", "write", "t")
	allow("write", "topic", "t")
	wantClientDenied(t, "offsets without read on the group", run(true), "User:alice", "read", "g")
	allow("read", "group", "g")
	allow("read", "topic", "t")
	if err := run(true); err != nil {
		t.Fatal(err)
	}
	cs, err := admin.Admin().FetchOffsets(ctx, "g", "t")
	if err != nil || len(cs) != 1 || cs[0].Offset != 1 {
		t.Fatalf("the group's offsets: %+v %v, want t/0 at 1", cs, err)
	}
	recs := readCommitted(t, admin, "t")
	if len(recs) != 1 {
		t.Fatalf("read_committed read %d records, want the committed one", len(recs))
	}
}

// readCommitted reads topic from its start to its end, read_committed.
func readCommitted(t *testing.T, c *client.Client, topic string) []client.ConsumedRecord {
	t.Helper()
	ctx := ctx(t)
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: topic, Start: client.Earliest()})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var out []client.ConsumedRecord
	for {
		recs, err := cons.Poll(ctx)
		if err != nil {
			return out
		}
		out = append(out, recs...)
	}
}

// In a cluster any node serves the Transactions service: a node that
// does not coordinate transactions passes each call on to the one that
// does (a client is not sent there), and the transaction's records and
// offsets commit as on a single node.
func TestClusterTxnThroughAnyNode(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	_, rest := metaLeader(t, c)
	follower := rest[0]
	ctx := ctx(t)
	cc, err := grpc.NewClient(follower.APIAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var init *pb.TxnInitResponse
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		init, err = pb.NewTransactionsClient(cc).InitProducer(ctx, &pb.TxnInitRequest{TransactionalId: "probe"})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || init.ProducerId < 0 {
		t.Fatalf("init producer on a node that does not coordinate: %v, %v", init, err)
	}

	cl, err := client.Dial(follower.APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Admin().CreateTopic(ctx, "out", client.TopicOptions{Partitions: 2, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	p, err := cl.NewTransactionalProducer(ctx, "tx-cluster", client.TransactionalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	for _, commit := range []bool{false, true} {
		tx, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := tx.Produce(ctx, client.Record{Topic: "out", Partition: client.ToPartition(int32(i % 2)), Value: []byte{byte(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "out", Offset: 10}}); err != nil {
			t.Fatal(err)
		}
		if !commit {
			// Open, written: latest under read_committed is each
			// partition's last stable offset, on its leader.
			if err := tx.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			offs, err := cl.Admin().ListOffsets(ctx, "out", nil, client.Latest())
			if err != nil || len(offs) != 2 || offs[0].Offset != 0 || offs[1].Offset != 0 || offs[0].HighWatermark != 5 {
				t.Fatalf("latest with a transaction open: %+v %v, want offset 0 below high watermark 5 in both partitions", offs, err)
			}
		}
		end := tx.Abort
		if commit {
			end = tx.Commit
		}
		if err := end(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A newer producer of the id, through the same node, fences the
	// first: the coordinator's refusal crosses the peer call as such.
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := cl.NewTransactionalProducer(ctx, "tx-cluster", client.TransactionalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close(context.Background())
	if err := tx.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "out", Offset: 99}}); !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("a fenced producer's offsets through a node that passes them on: %v, want ErrProducerFenced", err)
	}
	if recs := readCommitted(t, cl, "out"); len(recs) != 10 {
		t.Fatalf("read_committed read %d records, want the committed transaction's 10", len(recs))
	}
	cs, err := cl.Admin().FetchOffsets(ctx, "g", "out")
	if err != nil || len(cs) == 0 || cs[0].Offset != 10 {
		t.Fatalf("the group's offsets: %+v %v, want out/0 at 10", cs, err)
	}
}

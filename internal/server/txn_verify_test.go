package server_test

import (
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// A native transactional batch that names its transactional id is
// verified as Kafka's are: refused (FAILED_PRECONDITION, reason
// INVALID_TXN_STATE) before its partition is added to the transaction
// and after the transaction ended, stored once it is added.
func TestNativeTransactionalProduceIsVerified(t *testing.T) {
	s := nodetest.Start(t)
	c := dial(t, s)
	createTopic(t, c, "t", 1)
	txc := pb.NewTransactionsClient(c.cc)
	init, err := txc.InitProducer(ctx(t), &pb.TxnInitRequest{TransactionalId: "tv"})
	if err != nil {
		t.Fatal(err)
	}
	prod := &pb.TxnProducer{TransactionalId: "tv", ProducerId: init.ProducerId, Epoch: init.Epoch}
	seq := int32(0)
	produce := func() error {
		b := batch.EncodeTransactional(nil, batch.Producer{ID: init.ProducerId, Epoch: int16(init.Epoch), Sequence: seq}, []batch.Record{{Timestamp: 1, Value: []byte("v")}})
		part := int32(0)
		_, err := c.log.Produce(ctx(t), &pb.ProduceRequest{Topic: "t", Partition: &part, Batch: b, TransactionalId: "tv"})
		if err == nil {
			seq++
		}
		return err
	}
	wantInvalidTxnState := func(what string, err error) {
		t.Helper()
		st, _ := status.FromError(err)
		reason := ""
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				reason = ei.Reason
			}
		}
		if st.Code() != codes.FailedPrecondition || reason != "INVALID_TXN_STATE" {
			t.Fatalf("%s: %v (reason %q), want FAILED_PRECONDITION with reason INVALID_TXN_STATE", what, err, reason)
		}
	}
	wantInvalidTxnState("a batch before its partition was added", produce())
	if _, err := txc.AddPartitions(ctx(t), &pb.TxnAddPartitionsRequest{Producer: prod, Partitions: []*pb.TxnPartition{{Topic: "t"}}}); err != nil {
		t.Fatal(err)
	}
	if err := produce(); err != nil {
		t.Fatalf("a batch in the transaction: %v", err)
	}
	if _, err := txc.End(ctx(t), &pb.TxnEndRequest{Producer: prod, Commit: true}); err != nil {
		t.Fatal(err)
	}
	wantInvalidTxnState("a late batch after the commit", produce())
}

package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A transactional batch is stored only in a partition of its producer's
// ongoing transaction (KIP-890's verification): one sent before
// AddPartitionsToTxn, and a late one sent after the transaction
// committed, are refused with INVALID_TXN_STATE and stored nowhere, so no
// transaction opens that no marker would end (the last stable offset
// stays at the high watermark). This is transaction version 1's rule:
// the client speaks Produce up to v11 and EndTxn up to v4 (from Produce
// v12 a produce adds its partition, from EndTxn v5 the epoch is bumped:
// txn_tv2_test.go).
func TestTransactionalProduceIsVerified(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "v", 1)
	cl := newClient(t, n.addr, tv1Versions())
	ctx := testCtx(t)
	id := "verified"

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 10000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v, code %d", err, ir.ErrorCode)
	}
	seq := int32(0)
	produce := func() int16 {
		t.Helper()
		b := batch.Encode(nil, 0, batch.Producer{ID: ir.ProducerID, Epoch: ir.ProducerEpoch, Sequence: seq}, []batch.Record{{Timestamp: 1, Value: []byte("x")}})
		binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
		binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "v"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			seq++
		}
		return code
	}
	if code := produce(); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce before AddPartitionsToTxn: code %d, want INVALID_TXN_STATE", code)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, ir.ProducerID, ir.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "v", []int32{0}
	add.Topics = append(add.Topics, at)
	if _, err := add.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if code := produce(); code != 0 {
		t.Fatalf("produce in the transaction: code %d", code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	if er, err := end.RequestWith(ctx, cl); err != nil || er.ErrorCode != 0 {
		t.Fatalf("commit: %v, code %v", err, er)
	}
	if code := produce(); code != kerr.InvalidTxnState.Code {
		t.Fatalf("a late batch after the commit: code %d, want INVALID_TXN_STATE", code)
	}
	if lso, hw := listEnd(t, cl, "v", 1), listEnd(t, cl, "v", 0); lso != hw || hw != 2 {
		t.Fatalf("last stable offset %d, high watermark %d: want both 2 (the batch and its marker)", lso, hw)
	}
}

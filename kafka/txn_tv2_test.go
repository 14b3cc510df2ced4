package kafka

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
)

// txnBatch is a transactional batch of one record of producer pid at
// epoch and sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, value string) []byte {
	b := batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: epoch, Sequence: seq}, []batch.Record{{Timestamp: 1, Value: []byte(value)}})
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	return b
}

// capped is a client of addr that speaks Produce up to version v.
func capped(t *testing.T, addr string, v int16, opts ...kgo.Opt) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, v)
	return newClient(t, addr, append(opts, kgo.MaxVersions(vs))...)
}

// tv1Versions are the versions of a client of transaction version 1:
// below Produce v12, EndTxn v5 and TxnOffsetCommit v5.
func tv1Versions() kgo.Opt {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(26, 4)
	vs.SetMaxKeyVersion(28, 4)
	return kgo.MaxVersions(vs)
}

// produceTxnBatch sends b to topic's partition as transactional id id's and
// answers the partition's error code.
func produceTxnBatch(t *testing.T, cl *kgo.Client, id, topic string, partition int32, b []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// ApiVersions advertises transaction.version finalized at 2, and the
// versions of KIP-890 part 2 (Produce v12, EndTxn v5, TxnOffsetCommit v5).
func TestAPIVersionsAdvertisesTransactionVersion2(t *testing.T) {
	n := startNode(t)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), newClient(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinalizedFeaturesEpoch < 0 || len(resp.FinalizedFeatures) != 1 || resp.FinalizedFeatures[0].Name != "transaction.version" ||
		resp.FinalizedFeatures[0].MaxVersionLevel != 2 || len(resp.SupportedFeatures) != 1 || resp.SupportedFeatures[0].MaxVersion != 2 {
		t.Fatalf("features: epoch %d, finalized %+v, supported %+v", resp.FinalizedFeaturesEpoch, resp.FinalizedFeatures, resp.SupportedFeatures)
	}
	want := map[int16]int16{0: 12, 26: 5, 28: 5}
	for _, k := range resp.ApiKeys {
		if v, ok := want[k.ApiKey]; ok && k.MaxVersion != v {
			t.Errorf("api %d: max version %d, want %d", k.ApiKey, k.MaxVersion, v)
		}
	}
}

// Under transaction version 2 each EndTxn bumps the epoch, so a late
// batch of transaction N, sent while N+1 is ongoing and holds its
// partition but has not written there yet, is refused at the old epoch,
// by Produce v12 (which would add the partition) and v11 (verified)
// alike; N+1 commits without it. Under transaction version 1 (the epoch
// kept) the batch joins N+1.
func TestLateBatchOfEndedTransactionIsFenced(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "late", 2)
	ctx := testCtx(t)
	id := "late-tv2"
	cl := speaksTV2(t, txnProducer(t, n.addr, id))
	raw := newClient(t, n.addr)

	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "late", Partition: 0, Value: []byte("n")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epochN, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// Transaction N+1: ongoing (a record in partition 1), holding
	// partition 0 (added as a producer adds it before writing there).
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "late", Partition: 1, Value: []byte("n+1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid1, epoch1, err := cl.ProducerID(ctx)
	if err != nil || pid1 != pid || epoch1 != epochN+1 {
		t.Fatalf("after EndTxn the producer is at %d/%d (%v), want %d/%d: the epoch is bumped at each end", pid1, epoch1, err, pid, epochN+1)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid1, epoch1
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "late", []int32{0}
	add.Topics = append(add.Topics, at)
	if ar, err := add.RequestWith(ctx, raw); err != nil || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partition 0 to N+1: %v %+v", err, ar)
	}
	for _, v := range []int16{12, 11} {
		code := produceTxnBatch(t, capped(t, n.addr, v), id, "late", 0, txnBatch(pid, epochN, 1, "late"))
		if code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("late batch of N at epoch %d (produce v%d): code %d (%v), want fenced", epochN, v, code, kerr.ErrorForCode(code))
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, n.addr, "late", kgo.ReadCommitted(), 2); !slices.Equal(got, []string{"n", "n+1"}) {
		t.Fatalf("read_committed read %v, want [n n+1]", got)
	}
	if hw := listEnd(t, raw, "late", 0); hw != 3 {
		t.Fatalf("partition 0 ends at %d, want 3 (N's record and two markers)", hw)
	}
}

// Commit and abort cycles under transaction version 2: the epoch goes
// up by one at each end, read_committed reads the committed records
// only, and offsets sent with TxnOffsetCommit v5 (no AddOffsetsToTxn)
// are committed with their transaction only.
func TestTransactionVersion2Cycles(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "cycles", 2)
	ctx := testCtx(t)
	cl := speaksTV2(t, txnProducer(t, n.addr, "cycles-tv2"))
	raw := newClient(t, n.addr)
	var want []string
	last := int16(-1)
	for i := range 6 {
		commit := i%2 == 0
		v := string(rune('a' + i))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cycles", Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pid, epoch, err := cl.ProducerID(ctx)
		if err != nil || (last >= 0 && epoch != last+1) {
			t.Fatalf("cycle %d: epoch %d (%v), want %d", i, epoch, err, last+1)
		}
		last = epoch
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = "cycles-tv2", "cycles-group", pid, epoch
		oc.Generation, oc.MemberID = -1, ""
		ot := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic = "cycles"
		op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, int64(100+i)
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		if or, err := oc.RequestWith(ctx, raw); err != nil || or.Version != 5 || or.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("cycle %d: TxnOffsetCommit: %v %+v", i, err, or)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("cycle %d (commit %v): %v", i, commit, err)
		}
		if commit {
			want = append(want, v)
		}
		if got := fetchOffset(t, raw, "cycles-group", "cycles", 0); got != int64(100+i/2*2) {
			t.Fatalf("cycle %d: committed offset %d, want %d", i, got, 100+i/2*2)
		}
	}
	if got := readAll(t, n.addr, "cycles", kgo.ReadCommitted(), len(want)); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
}

// fetchOffset is group's committed offset of topic's partition.
func fetchOffset(t *testing.T, cl *kgo.Client, group, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// A client held to transaction version 1 (its versions capped below
// Produce v12, EndTxn v5 and TxnOffsetCommit v5) keeps its epoch across
// transactions and adds its partitions itself.
func TestTransactionVersion1ClientKeepsItsEpoch(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "tv1", 2)
	ctx := testCtx(t)
	cl := txnProducer(t, n.addr, "tv1", tv1Versions())
	produceTxn(t, cl, "tv1", true, "x")
	_, e0, _ := cl.ProducerID(ctx)
	produceTxn(t, cl, "tv1", false, "y")
	produceTxn(t, cl, "tv1", true, "z")
	if _, e1, err := cl.ProducerID(ctx); err != nil || e1 != e0 {
		t.Fatalf("epoch %d then %d (%v): a transaction version 1 producer keeps its epoch", e0, e1, err)
	}
	if got := readAll(t, n.addr, "tv1", kgo.ReadCommitted(), 2); !slices.Equal(got, []string{"x", "z"}) {
		t.Fatalf("read_committed read %v", got)
	}
}

// A produce v12 that would add its partition to a transaction is
// authorized as the produce: without write on the transactional id it
// is refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), without write on
// the topic too (TOPIC_AUTHORIZATION_FAILED), and neither adds the
// partition to the transaction nor writes a record.
func TestAddByProduceRefusedPrincipal(t *testing.T) {
	b, addr, _ := startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	for _, u := range []string{"eve", "mal"} {
		if err := b.CreateUser(ctx, "User:admin", u, u+"-pw", false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range []string{"a", "b"} {
		if _, err := b.CreateTopic(ctx, "User:admin", topicConfig(tp, 1)); err != nil {
			t.Fatal(err)
		}
	}
	allow := allowUser(t, b)
	for _, op := range []auth.Operation{auth.OpWrite, auth.OpDescribe} {
		allow("eve", op, auth.ResourceTopic, "a")
		allow("eve", op, auth.ResourceTransactionalID, "eve-txn")
		allow("mal", op, auth.ResourceTopic, "a")
		allow("mal", op, auth.ResourceTopic, "b")
	}
	eve := txnProducer(t, addr, "eve-txn", kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))
	pid, epoch, err := eve.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// eve may not write topic b.
	if code := produceTxnBatch(t, eve, "eve-txn", "b", 0, txnBatch(pid, epoch, 0, "refused")); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("eve's produce to b: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	// mal may write both topics, but not use eve's transactional id.
	mal := newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "mal", "mal-pw")))
	if code := produceTxnBatch(t, mal, "eve-txn", "a", 0, txnBatch(pid, epoch, 0, "refused")); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("mal's produce as eve-txn: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", code)
	}
	for _, tp := range []string{"a", "b"} {
		if end, _, err := b.ListOffset(ctx, "User:admin", tp, 0, broker.Latest); err != nil || end != 0 {
			t.Fatalf("%s ends at %d (%v), want 0", tp, end, err)
		}
	}
	if d, _, err := b.DescribeTxn(ctx, "User:admin", "eve-txn"); err != nil || len(d.Partitions) != 0 {
		t.Fatalf("eve-txn after the refused produces: %+v %v, want no partition", d, err)
	}
	// Granted, eve's produce adds the partition, and her end commits it.
	if code := produceTxnBatch(t, eve, "eve-txn", "a", 0, txnBatch(pid, epoch, 0, "granted")); code != 0 {
		t.Fatalf("eve's produce to a: code %d", code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "eve-txn", pid, epoch, true
	er, err := end.RequestWith(ctx, eve)
	if err != nil || er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
		t.Fatalf("commit: %v %+v, want producer %d epoch %d", err, er, pid, epoch+1)
	}
	if end, _, err := b.ListOffset(ctx, "User:admin", "a", 0, broker.Latest); err != nil || end != 2 {
		t.Fatalf("a ends at %d (%v), want 2 (the record and its marker)", end, err)
	}
}

package kafka_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logd/logd/internal/batch"
)

// Transaction version 2 on 3 nodes while the coordinator moves: a
// transaction begun under one metadata leader is committed under the
// next, the epoch goes up by one at each end on both, and a late batch
// of the first transaction (its epoch) is refused after the move, while
// the next transaction holds its partition.
func TestClusterTransactionVersion2CoordinatorMoves(t *testing.T) {
	lateBatchAfterAMove(t, true)
}

// Transaction version 1 on 3 nodes while the first transaction's
// partition changes leader: its late batch, which the new leader may
// read as going on a transaction still open there (its marker not
// applied yet when the produce arrives), is verified and refused, and
// the next transaction commits without it.
func TestClusterTransactionVersion1LateBatchAfterLeaderMove(t *testing.T) {
	lateBatchAfterAMove(t, false)
}

// lateBatchAfterAMove commits a transaction with a record in partition 0,
// begins the next with one in partition 1, stops a node (tv2: the
// metadata leader, which coordinates; otherwise partition 0's leader),
// and sends a batch of the first transaction to partition 0, late: it
// must be refused, and read_committed must read the committed records
// only.
func lateBatchAfterAMove(t *testing.T, tv2 bool) {
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 3, nil, "tv"); err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.TransactionalID("tv-moves"),
		kgo.TransactionTimeout(20 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	late, step := cl, int16(1) // the late batch's client; the epoch's step at each end
	if !tv2 {
		// Below Produce v12, EndTxn v5 and TxnOffsetCommit v5.
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(int16(kmsg.Produce), 11)
		vs.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
		vs.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
		opts = append(opts, kgo.MaxVersions(vs))
		late, step = newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.MaxVersions(vs)), 0
	}
	p := newClient(t, seeds[0], opts...)
	// Knowing the brokers' versions before its first transaction, the
	// client runs that one under transaction version 2 already.
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	produce := func(part int32, v string) {
		t.Helper()
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "tv", Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	end := func(commit bool) {
		t.Helper()
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end (commit %v): %v", commit, err)
		}
	}
	epoch := func(want int16) {
		t.Helper()
		if _, e, err := p.ProducerID(ctx); err != nil || e != want {
			t.Fatalf("producer at epoch %d (%v), want %d", e, err, want)
		}
	}

	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(0, "first")
	pid, e0, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end(true)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(1, "second-a")
	epoch(e0 + step)

	if tv2 {
		metaLeaderNode(t, c).Stop()
	} else {
		partitionLeaderNode(t, c, adm, "tv").Stop()
	}

	// A batch of transaction 1, late, in partition 0, which transaction
	// 2 has not written yet: refused (tv2: at its epoch; tv1: partition 0
	// is in no ongoing transaction).
	code := int16(-1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code = lateProduce(t, late, "tv-moves", "tv", 0, pid, e0, 1)
		retry := code == kerr.NotLeaderForPartition.Code || code == kerr.LeaderNotAvailable.Code || code == kerr.NotCoordinator.Code ||
			code == kerr.CoordinatorNotAvailable.Code || code == kerr.RequestTimedOut.Code
		if !retry || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	refused := code == kerr.ProducerFenced.Code || code == kerr.InvalidProducerEpoch.Code
	if !tv2 {
		refused = code == kerr.InvalidTxnState.Code
	}
	if !refused {
		t.Fatalf("late batch of transaction 1 after the move: code %d (%v), want it refused", code, kerr.ErrorForCode(code))
	}
	produce(0, "second-b")
	epoch(e0 + step)
	end(true)
	epoch(e0 + 2*step)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(1, "aborted")
	end(false)

	rd := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("tv"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	for len(got) < 3 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed read %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"first", "second-a", "second-b"}) {
		t.Fatalf("read_committed read %v", got)
	}
}

// lateProduce sends one transactional record of producer pid at epoch and
// sequence seq to topic's partition as transactional id id's, and
// answers the partition's error code.
func lateProduce(t *testing.T, cl *kgo.Client, id, topic string, part int32, pid int64, epoch int16, seq int32) int16 {
	t.Helper()
	b := batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: epoch, Sequence: seq}, []batch.Record{{Timestamp: 1, Value: []byte("late")}})
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		return kerr.NotLeaderForPartition.Code // the leader moving: ask again
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

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

	"github.com/logd/logd/internal/batch"
)

// Transaction version 2 on 3 nodes while the coordinator moves: a
// transaction begun under one metadata leader is committed under the
// next, the epoch goes up by one at each end on both, and a late batch
// of the first transaction (its epoch) is refused after the move, while
// the next transaction holds its partition.
func TestClusterTransactionVersion2CoordinatorMoves(t *testing.T) {
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 3, nil, "tv2"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.TransactionalID("tv2-moves"),
		kgo.TransactionTimeout(20*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(part int32, v string) {
		t.Helper()
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "tv2", Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	end := func(commit bool) {
		t.Helper()
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end (commit %v): %v", commit, err)
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

	old := metaLeaderNode(t, c)
	old.Stop()

	// A batch of transaction 1, late, in partition 0, which transaction
	// 2 has not written yet: refused at its epoch.
	code := int16(-1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code = lateProduce(t, cl, "tv2-moves", "tv2", 0, pid, e0, 1)
		retry := code == kerr.NotLeaderForPartition.Code || code == kerr.LeaderNotAvailable.Code || code == kerr.NotCoordinator.Code ||
			code == kerr.CoordinatorNotAvailable.Code || code == kerr.RequestTimedOut.Code
		if !retry || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late batch of transaction 1 after the move: code %d (%v), want it fenced", code, kerr.ErrorForCode(code))
	}
	produce(0, "second-b")
	if _, e, err := p.ProducerID(ctx); err != nil || e != e0+1 {
		t.Fatalf("transaction 2 at epoch %d (%v), want %d", e, err, e0+1)
	}
	end(true)
	if _, e, err := p.ProducerID(ctx); err != nil || e != e0+2 {
		t.Fatalf("after transaction 2: epoch %d (%v), want %d", e, err, e0+2)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(1, "aborted")
	end(false)

	rd := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("tv2"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
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

package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// FindCoordinator for a transactional id, on a core without transactions,
// answers the non-retriable TRANSACTIONAL_ID_AUTHORIZATION_FAILED (v3 and
// v4's batched form), and for a key type logd has no coordinator of
// INVALID_REQUEST: clients fail at once instead of retrying.
func TestFindCoordinatorRefusesTransactions(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{})
	ctx := testCtx(t)
	clients := map[int16]*kgo.Client{
		3: newClient(t, s.AdvertisedAddr(), kgo.MaxVersions(kversion.V2_8_0())), // FindCoordinator v3
		4: newClient(t, s.AdvertisedAddr()),
	}
	for _, tc := range []struct {
		keyType int8
		want    *kerr.Error
	}{{1, kerr.TransactionalIDAuthorizationFailed}, {2, kerr.InvalidRequest}} {
		for v, cl := range clients {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = tc.keyType
			req.CoordinatorKey, req.CoordinatorKeys = "tx", []string{"tx"}
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version != v {
				t.Fatalf("sent v%d, want v%d", resp.Version, v)
			}
			code := resp.ErrorCode
			if v >= 4 {
				if len(resp.Coordinators) != 1 {
					t.Fatalf("v%d: %d coordinators, want 1", v, len(resp.Coordinators))
				}
				code = resp.Coordinators[0].ErrorCode
			}
			if err := kerr.ErrorForCode(code); !errors.Is(err, tc.want) || kerr.IsRetriable(err) {
				t.Errorf("FindCoordinator v%d key type %d: code %d (%v), want %v", v, tc.keyType, code, err, tc.want)
			}
		}
	}
}

// txnProducer is a transactional kgo client of transactional id id.
func txnProducer(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(10 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// speaksTV2 has cl learn the brokers' versions (a ping): a client that
// begins its first transaction before it knows them runs that one under
// transaction version 1 and opts in to 2 at its end.
func speaksTV2(t *testing.T, cl *kgo.Client) *kgo.Client {
	t.Helper()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return cl
}

// produceTxn produces values to topic in one transaction and ends it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// readAll reads topic from the start with isolation iso until it has
// read want records (or the test's deadline).
func readAll(t *testing.T, addr, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testCtx(t)
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(got), want, topic, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

// listEnd is ListOffsets latest of topic's partition 0 under isolation
// level iso (0 read_uncommitted, 1 read_committed).
func listEnd(t *testing.T, cl *kgo.Client, topic string, iso int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: code %d", p.ErrorCode)
	}
	return p.Offset
}

// franz-go's transactional producer commits one transaction and aborts
// another over two partitions: a read_committed consumer reads the
// committed records only, a read_uncommitted one both; while a third is
// open, ListOffsets latest under read_committed answers its first offset
// (the last stable offset) and the high watermark otherwise.
func TestKgoTransactionsCommitAndAbort(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "txn", 2)
	cl := txnProducer(t, n.addr, "logd-txn")
	produceTxn(t, cl, "txn", true, "c1", "c2", "c3")
	produceTxn(t, cl, "txn", false, "a1", "a2")
	produceTxn(t, cl, "txn", true, "c4")
	if got := readAll(t, n.addr, "txn", kgo.ReadCommitted(), 4); !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Fatalf("read_committed read %v", got)
	}
	if got := readAll(t, n.addr, "txn", kgo.ReadUncommitted(), 6); len(got) != 6 {
		t.Fatalf("read_uncommitted read %v", got)
	}

	plain := newClient(t, n.addr)
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txn", Partition: 0, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	hw, lso := listEnd(t, plain, "txn", 0), listEnd(t, plain, "txn", 1)
	if lso != hw-1 {
		t.Fatalf("with a transaction open at %d: read_committed latest %d, want %d", hw-1, lso, hw-1)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if hw, lso := listEnd(t, plain, "txn", 0), listEnd(t, plain, "txn", 1); lso != hw {
		t.Fatalf("after the commit: read_committed latest %d, high watermark %d", lso, hw)
	}
}

// A second InitProducerId of a transactional id fences the first
// producer: its transaction's end is refused (PRODUCER_FENCED) and what
// it wrote is aborted; the second producer's transaction commits.
func TestTransactionalIDFencing(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "txn", 2)
	ctx := testCtx(t)
	zombie := txnProducer(t, n.addr, "fenced")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := txnProducer(t, n.addr, "fenced")
	produceTxn(t, fresh, "txn", true, "fresh")
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if got := readAll(t, n.addr, "txn", kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("read_committed read %v, want [fresh]", got)
	}
}

const pythonTransactions = `
import json, sys
from confluent_kafka import Producer, KafkaException

p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "logd-py-txn"})
try:
    p.init_transactions(20)
    for commit in (False, True):
        p.begin_transaction()
        p.produce("pytxn", value=b"committed" if commit else b"aborted", partition=0)
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
    print(json.dumps({"name": "no error"}))
except KafkaException as e:
    err = e.args[0]
    print(json.dumps({"name": err.name(), "fatal": err.fatal()}))
`

// librdkafka's transactions (through confluent-kafka-python): one
// transaction aborted, one committed; a read_committed reader finds the
// committed record only.
func TestConfluentKafkaPythonTransactions(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("confluent_kafka is not importable by %s: run `make tools` (Debian package python3-confluent-kafka): %v", py, err)
	}
	n := startNode(t)
	n.createTopic(t, "pytxn", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := run(t, ctx, "", py, "-c", pythonTransactions, n.addr)
	var res struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	if res.Name != "no error" {
		t.Fatalf("python transactions: %s", out)
	}
	if got := readAll(t, n.addr, "pytxn", kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"committed"}) {
		t.Fatalf("read_committed read %v, want [committed]", got)
	}
}

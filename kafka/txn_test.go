package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// FindCoordinator for a transactional id answers the non-retriable
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (v3 and v4's batched form), and
// for a key type logd has no coordinator of INVALID_REQUEST: clients fail
// at once instead of retrying.
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

// franz-go's transactional producer fails (its BeginTransaction, which
// initializes the producer id, or else its first produce) with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED instead of retrying a transaction
// coordinator until its deadline. The deadline only bounds a failure of
// the test: the assertion is on the error.
func TestKgoTransactionalProducerFails(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "txn", 1)
	cl := newClient(t, n.addr, kgo.TransactionalID("logd-txn"), kgo.DefaultProduceTopic("txn"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, kgo.StringRecord("in a transaction")).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	// Nothing was written.
	plain := newClient(t, n.addr)
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "txn"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), plain)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 0 {
		t.Fatalf("after the refused transaction the log ends at %d (code %d), want 0", p.Offset, p.ErrorCode)
	}
}

const pythonTransactions = `
import json, sys
from confluent_kafka import Producer, KafkaException

p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "logd-py-txn"})
try:
    p.init_transactions(20)
    print(json.dumps({"name": "no error"}))
except KafkaException as e:
    err = e.args[0]
    print(json.dumps({"name": err.name(), "fatal": err.fatal()}))
`

// librdkafka's init_transactions (through confluent-kafka-python) fails
// with a fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED instead of retrying
// the transaction coordinator lookup until its timeout.
func TestConfluentKafkaPythonTransactionsFail(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("confluent_kafka is not importable by %s: run `make tools` (Debian package python3-confluent-kafka): %v", py, err)
	}
	n := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := run(t, ctx, "", py, "-c", pythonTransactions, n.addr)
	var res struct {
		Name  string `json:"name"`
		Fatal bool   `json:"fatal"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	if res.Name != "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" || !res.Fatal {
		t.Fatalf("init_transactions: %+v, want a fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED", res)
	}
}

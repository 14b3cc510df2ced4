package kafka

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// kadm's DescribeTransactions, ListTransactions and DescribeProducers
// against a node with a franz-go transactional producer in the middle of
// a transaction over two partitions, then after its commit.
func TestKadmDescribeTransactions(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "txd", 2)
	ctx := testCtx(t)
	before := time.Now().UnixMilli()
	cl := txnProducer(t, n.addr, "desc-txn")
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txd", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, n.addr))

	d := describeTxn(t, adm, "desc-txn")
	if d.State != "Ongoing" || d.ProducerID != pid || d.ProducerEpoch != epoch || d.TimeoutMillis != 10000 ||
		d.StartTimestamp < before || d.StartTimestamp > time.Now().UnixMilli() {
		t.Fatalf("mid-transaction: %+v, want Ongoing, producer %d epoch %d, timeout 10000, started after %d", d, pid, epoch, before)
	}
	if got := d.Topics["txd"]; len(d.Topics) != 1 || len(got) != 2 {
		t.Fatalf("mid-transaction partitions %v, want txd 0 and 1", d.Topics)
	}
	ds, err := adm.DescribeTransactions(ctx, "no-such-txn")
	if err != nil || !errors.Is(ds["no-such-txn"].Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("an unknown id: %+v (%v), want TRANSACTIONAL_ID_NOT_FOUND", ds["no-such-txn"], err)
	}
	checkListed(t, adm, "desc-txn", "Ongoing", pid)
	checkProducers(t, adm, pid, epoch, before, 0, -1)

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	d = describeTxn(t, adm, "desc-txn")
	if d.State != "CompleteCommit" || len(d.Topics) != 0 || d.StartTimestamp < before {
		t.Fatalf("after the commit: %+v, want CompleteCommit, no partitions, the start kept", d)
	}
	checkListed(t, adm, "desc-txn", "CompleteCommit", pid)
	checkProducers(t, adm, pid, epoch, before, -1, 1)
}

func describeTxn(t *testing.T, adm *kadm.Client, id string) kadm.DescribedTransaction {
	t.Helper()
	ds, err := adm.DescribeTransactions(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ds.On(id, nil)
	if err != nil || d.Err != nil {
		t.Fatalf("describe %s: %v %v", id, err, d.Err)
	}
	return d
}

// checkListed: ListTransactions lists id in state with producer pid, and
// its filters (state, producer id, whole-id pattern) select it or not.
func checkListed(t *testing.T, adm *kadm.Client, id, state string, pid int64) {
	t.Helper()
	ctx := testCtx(t)
	other := "Ongoing"
	if state == other {
		other = "CompleteCommit"
	}
	for _, tc := range []struct {
		pids     []int64
		states   []string
		pattern  string
		included bool
	}{
		{nil, nil, "", true},
		{[]int64{pid}, []string{state}, "", true},
		{nil, []string{other, state}, "desc-.*", true},
		{[]int64{pid + 1}, nil, "", false},
		{nil, []string{other}, "", false},
		{nil, nil, "desc", false}, // a pattern matches the whole id
	} {
		ls, err := adm.ListTransactionsByTxPattern(ctx, tc.pids, tc.states, tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := ls[id]
		if ok != tc.included || ok && (l.State != state || l.ProducerID != pid) {
			t.Errorf("list (pids %v, states %v, pattern %q): %+v, want %s listed %v in %s", tc.pids, tc.states, tc.pattern, ls, id, tc.included, state)
		}
	}
	if _, err := adm.ListTransactionsByTxPattern(ctx, nil, nil, "("); !errors.Is(err, kerr.InvalidRegularExpression) {
		t.Errorf("an invalid pattern: %v, want INVALID_REGULAR_EXPRESSION", err)
	}
}

// checkProducers: DescribeProducers finds the producer in both partitions
// (one record each, sequence 0) with its open transaction's first offset
// (txnStart, -1 for none) and the coordinator epoch of its last marker
// (the transaction's number; -1 before any).
func checkProducers(t *testing.T, adm *kadm.Client, pid int64, epoch int16, before, txnStart int64, coordEpoch int32) {
	t.Helper()
	dts, err := adm.DescribeProducers(testCtx(t), kadm.TopicsSet{"txd": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		dp := dts["txd"].Partitions[p]
		pr, ok := dp.ActiveProducers[pid]
		if dp.Err != nil || !ok || pr.ProducerEpoch != epoch || pr.LastSequence != 0 ||
			pr.LastTimestamp < before || pr.CurrentTxnStartOffset != txnStart || pr.CoordinatorEpoch != coordEpoch {
			t.Fatalf("partition %d's producers %+v (%v), want %d epoch %d, sequence 0, a timestamp after %d, transaction at %d, coordinator epoch %d",
				p, dp.ActiveProducers, dp.Err, pid, epoch, before, txnStart, coordEpoch)
		}
	}
}

// ListTransactions' duration filter (v1) keeps the ids whose transaction
// started more than the duration ago; a state filter no state has is
// listed back as unknown.
func TestListTransactionsDurationAndUnknownState(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "txd", 2)
	produceTxn(t, txnProducer(t, n.addr, "dur-txn"), "txd", true, "v")
	cl := newClient(t, n.addr)
	list := func(durationMs int64, states ...string) *kmsg.ListTransactionsResponse {
		t.Helper()
		req := kmsg.NewPtrListTransactionsRequest()
		req.DurationFilterMillis, req.StateFilters = durationMs, states
		resp, err := req.RequestWith(testCtx(t), cl.SeedBrokers()[0])
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("list: %v, code %v", err, resp)
		}
		return resp
	}
	if resp := list(-1); len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != "dur-txn" {
		t.Fatalf("without a duration: %+v", resp.TransactionStates)
	}
	if resp := list(time.Hour.Milliseconds()); len(resp.TransactionStates) != 0 {
		t.Fatalf("started less than an hour ago, yet listed: %+v", resp.TransactionStates)
	}
	resp := list(-1, "Bogus", "Dead")
	if !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) || len(resp.TransactionStates) != 0 {
		t.Fatalf("states Bogus, Dead: unknown %v, listed %+v; want [Bogus] and none", resp.UnknownStateFilters, resp.TransactionStates)
	}
}

// Authorization as in Kafka: DescribeTransactions needs describe on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), ListTransactions
// leaves out the ids the principal may not describe, DescribeProducers
// needs read on the topic (TOPIC_AUTHORIZATION_FAILED); granted, each
// answers.
func TestDescribeTransactionsRefusedPrincipal(t *testing.T) {
	b, addr, _ := startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	for _, u := range []string{"bob", "eve"} {
		if err := b.CreateUser(ctx, "User:admin", u, u+"-pw", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("txd", 2)); err != nil {
		t.Fatal(err)
	}
	allow := allowUser(t, b)
	allow("bob", auth.OpWrite, auth.ResourceTopic, "txd")
	allow("bob", auth.OpWrite, auth.ResourceTransactionalID, "bob-txn")
	allow("eve", auth.OpWrite, auth.ResourceTopic, "txd")
	allow("eve", auth.OpWrite, auth.ResourceTransactionalID, "eve-txn")
	bob := txnProducer(t, addr, "bob-txn", kgo.SASL(scramAuth(auth.ScramSHA256, "bob", "bob-pw")))
	if err := bob.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "txd", Value: []byte("bob")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produceTxn(t, txnProducer(t, addr, "eve-txn", kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw"))), "txd", true, "eve")

	eve := newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw"))).SeedBrokers()[0]
	describe := func() int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"bob-txn"}
		resp, err := req.RequestWith(ctx, eve)
		if err != nil {
			t.Fatal(err)
		}
		return resp.TransactionStates[0].ErrorCode
	}
	producers := func() int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "txd", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, eve)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := describe(); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("eve describes bob-txn: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", code)
	}
	req := kmsg.NewPtrListTransactionsRequest()
	resp, err := req.RequestWith(ctx, eve)
	if err != nil || resp.ErrorCode != 0 || len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != "eve-txn" {
		t.Fatalf("eve lists %+v (%v), want eve-txn only", resp, err)
	}
	if code := producers(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("eve (write on txd, not read) describes its producers: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}

	allow("eve", auth.OpDescribe, auth.ResourceTransactionalID, "bob-txn")
	allow("eve", auth.OpRead, auth.ResourceTopic, "txd")
	if code := describe(); code != 0 {
		t.Fatalf("granted describe on bob-txn: code %d", code)
	}
	if code := producers(); code != 0 {
		t.Fatalf("granted read on txd: code %d", code)
	}
}

// allowUser returns a function that lets a user do op on a resource of
// b, granted by the superuser User:admin.
func allowUser(t *testing.T, b *broker.Broker) func(user string, op auth.Operation, rt auth.ResourceType, name string) {
	return func(user string, op auth.Operation, rt auth.ResourceType, name string) {
		t.Helper()
		err := b.AddACLs(testCtx(t), "User:admin", auth.ACL{Principal: auth.User(user), Permission: auth.Allow, Operation: op,
			ResourceType: rt, PatternType: auth.PatternLiteral, Name: name})
		if err != nil {
			t.Fatal(err)
		}
	}
}

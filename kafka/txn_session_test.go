package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TransactSessionForTest moves n records from topic "in" to topic "out" with
// franz-go's GroupTransactSession (consume, transform, produce, offsets
// sent to the transaction, commit), then checks that a read_committed
// reader finds every input record exactly once in the output and that
// the group's committed offsets cover the input. Exported for the
// cluster test (package kafka_test).
func TransactSessionForTest(t *testing.T, seeds []string, n int) {
	ctx := testCtx(t)
	admCl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(admCl)
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 2, -1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	in := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"))
	for i := range n {
		in.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("eos"),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("out"),
		kgo.TransactionTimeout(10*time.Second), kgo.MetadataMinAge(50*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	moved := 0
	for moved < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("moved %d of %d records", moved, n)
		}
		if fs.Empty() {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		var recs int
		fs.EachRecord(func(r *kgo.Record) {
			recs++
			sess.Produce(ctx, kgo.StringRecord("x-"+string(r.Value)), nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			moved += recs
		}
	}
	got := readAll(t, seeds[0], "out", kgo.ReadCommitted(), n)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("x-%d", i)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed output: %d records, want each of %d once", len(got), n)
	}
	offs, err := adm.FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != int64(n) {
		t.Fatalf("the group's committed offsets sum to %d, want %d", sum, n)
	}
}

func TestGroupTransactSession(t *testing.T) {
	n := startNode(t)
	TransactSessionForTest(t, []string{n.addr}, 300)
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/client"
)

// txnCtx bounds a transactional test.
func txnCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func createTopics(t *testing.T, c *client.Client, parts int32, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := c.Admin().CreateTopic(txnCtx(t), n, client.TopicOptions{Partitions: parts}); err != nil {
			t.Fatal(err)
		}
	}
}

// values reads topic to its end under iso and returns the records'
// values, sorted.
func values(t *testing.T, c *client.Client, topic string, iso client.Isolation) []string {
	t.Helper()
	var out []string
	for _, r := range readAll(t, c, client.ConsumerOptions{Topic: topic, Start: client.Earliest(), Isolation: iso}) {
		out = append(out, string(r.Value))
	}
	slices.Sort(out)
	return out
}

func produceAll(t *testing.T, tx *client.Transaction, prefix string, n int, topics ...string) []string {
	t.Helper()
	var want []string
	for i := range n {
		for _, topic := range topics {
			v := fmt.Sprintf("%s-%s-%d", prefix, topic, i)
			if err := tx.Produce(txnCtx(t), client.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
	}
	return want
}

func newTxnProducer(t *testing.T, c *client.Client, id string, opts client.TransactionalOptions) *client.TransactionalProducer {
	t.Helper()
	p, err := c.NewTransactionalProducer(txnCtx(t), id, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// A committed transaction's records, in several partitions of two
// topics, are read by read_committed consumers; an aborted one's are not
// (read_uncommitted consumers see both); sequences go on across
// transactions of the producer.
func TestTxnCommitVisibleAbortInvisible(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 3, "a", "b")
	p := newTxnProducer(t, c, "tx-1", client.TransactionalOptions{MaxBatchBytes: 512})

	var committed, aborted []string
	for round := range 2 {
		tx, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		committed = append(committed, produceAll(t, tx, fmt.Sprint("c", round), 20, "a", "b")...)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		tx, err = p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		aborted = append(aborted, produceAll(t, tx, fmt.Sprint("x", round), 20, "a", "b")...)
		if err := tx.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Abort(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, topic := range []string{"a", "b"} {
		got = append(got, values(t, c, topic, client.ReadCommitted)...)
	}
	slices.Sort(got)
	slices.Sort(committed)
	if !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %d records %v,\nwant the %d committed %v", len(got), got, len(committed), committed)
	}
	all := append(slices.Clone(committed), aborted...)
	slices.Sort(all)
	got = nil
	for _, topic := range []string{"a", "b"} {
		got = append(got, values(t, c, topic, client.ReadUncommitted)...)
	}
	slices.Sort(got)
	if !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %d records, want the %d written", len(got), len(all))
	}
}

// Offsets sent to a transaction are committed when it commits, and not
// when it aborts.
func TestTxnOffsetsCommittedOnlyWithTheTransaction(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 2, "in", "out")
	p := newTxnProducer(t, c, "tx-offsets", client.TransactionalOptions{})
	committedOffset := func() map[int32]int64 {
		cs, err := c.Admin().FetchOffsets(ctx, "g", "in")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		for _, o := range cs {
			if o.Offset >= 0 {
				out[o.Partition] = o.Offset
			}
		}
		return out
	}

	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	produceAll(t, tx, "x", 3, "out")
	if err := tx.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "in", Partition: 0, Offset: 7}, {Topic: "in", Partition: 1, Offset: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(); len(got) != 0 {
		t.Fatalf("after an abort the group has offsets %v, want none", got)
	}

	tx, err = p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	produceAll(t, tx, "c", 3, "out")
	if err := tx.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "in", Partition: 0, Offset: 3}, {Topic: "in", Partition: 1, Offset: 4}}); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(); len(got) != 0 {
		t.Fatalf("before the commit the group has offsets %v, want none", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(); got[0] != 3 || got[1] != 4 || len(got) != 2 {
		t.Fatalf("after the commit the group has offsets %v, want 0:3 1:4", got)
	}
	if got := values(t, c, "out", client.ReadCommitted); len(got) != 3 {
		t.Fatalf("read %v, want the 3 committed records", got)
	}
}

// A second producer with the same transactional id fences the first: its
// writes to a partition of its transaction, its offsets and its commit
// fail with ErrProducerFenced, for good, and none of its records is
// read_committed; the new producer goes on.
func TestTxnFencing(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 1, "f")
	one := newTxnProducer(t, c, "tx-fence", client.TransactionalOptions{MaxBatchBytes: 256})
	tx1, err := one.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	produceAll(t, tx1, "old", 3, "f")
	if err := tx1.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	two := newTxnProducer(t, c, "tx-fence", client.TransactionalOptions{})
	// The partition is in tx1's transaction: its write reaches the
	// partition, which a newer epoch fenced.
	produceAll(t, tx1, "late", 1, "f")
	if err := tx1.Flush(ctx); !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("a fenced producer's write: %v, want ErrProducerFenced", err)
	}
	if err := tx1.Commit(ctx); !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("a fenced producer's commit: %v, want ErrProducerFenced", err)
	}
	if _, err := one.Begin(ctx); !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("a fenced producer's Begin: %v, want ErrProducerFenced", err)
	}

	tx2, err := two.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	produceAll(t, tx2, "new", 2, "f")
	if err := tx2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := values(t, c, "f", client.ReadCommitted); !slices.Equal(got, []string{"new-f-0", "new-f-1"}) {
		t.Fatalf("read_committed read %v, want the new producer's two records only", got)
	}
}

// A fenced producer's commit fails with ErrProducerFenced even when it
// wrote nothing since (the coordinator refuses its epoch).
func TestTxnFencedCommitOfOffsets(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 1, "in")
	one := newTxnProducer(t, c, "tx-fence-offsets", client.TransactionalOptions{})
	tx1, err := one.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newTxnProducer(t, c, "tx-fence-offsets", client.TransactionalOptions{})
	err = tx1.SendOffsets(ctx, "g", []client.CommittedOffset{{Topic: "in", Offset: 1}})
	if !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("a fenced producer's offsets: %v, want ErrProducerFenced", err)
	}
}

// A consumer that starts at the latest offset under read_committed
// starts at the last stable offset: the records of a transaction open
// then are read once it commits (starting at the high watermark would
// skip them); under read_uncommitted it starts at the high watermark.
func TestTxnLatestIsLastStableOffset(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 1, "l")
	p := newTxnProducer(t, c, "tx-latest", client.TransactionalOptions{})
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := produceAll(t, tx, "open", 4, "l")
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := c.Admin().ListOffsets(ctx, "l", nil, client.Latest())
	if err != nil || len(offs) != 1 || offs[0].Offset != 0 || offs[0].HighWatermark != 4 {
		t.Fatalf("latest under read_committed: %+v %v, want offset 0 (the open transaction's first) below high watermark 4", offs, err)
	}
	offs, err = c.Admin().ListOffsetsIsolated(ctx, "l", nil, client.Latest(), client.ReadUncommitted)
	if err != nil || len(offs) != 1 || offs[0].Offset != 4 {
		t.Fatalf("latest under read_uncommitted: %+v %v, want 4", offs, err)
	}

	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "l", Start: client.Latest(), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < len(want) {
		recs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a read_committed consumer started at latest read %v, want %v", got, want)
	}
}

// Misuse is refused with ErrInvalidTxnState: a second Begin while a
// transaction is open, a call on an ended one.
func TestTxnState(t *testing.T) {
	c, _ := dialServer(t)
	ctx := txnCtx(t)
	createTopics(t, c, 1, "s")
	p := newTxnProducer(t, c, "tx-state", client.TransactionalOptions{})
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Begin(ctx); !errors.Is(err, client.ErrInvalidTxnState) {
		t.Fatalf("Begin with a transaction open: %v, want ErrInvalidTxnState", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("an empty transaction's commit: %v", err)
	}
	if err := tx.Produce(ctx, client.Record{Topic: "s", Value: []byte("v")}); !errors.Is(err, client.ErrInvalidTxnState) {
		t.Fatalf("Produce on a committed transaction: %v, want ErrInvalidTxnState", err)
	}
	if _, err := c.NewTransactionalProducer(ctx, "", client.TransactionalOptions{}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("an empty transactional id: %v, want ErrInvalidArgument", err)
	}
}

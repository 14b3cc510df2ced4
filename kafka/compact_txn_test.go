package kafka

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions on a compacted topic with franz-go's transactional
// producer: a transaction aborted over a key's committed record, and one
// still open over a key a later plain record replaced. After the cleaner
// ran, a read_uncommitted consumer reads no aborted record and the
// committed record the abort came after; the open transaction's record is
// still there (the cleaner works below the last stable offset), and
// committed, read_committed reads it.
func TestCompactedTopicTransactionsWithFranzGo(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096"),
	}, "ctx")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	plain := newClient(t, n.addr, kgo.DefaultProduceTopic("ctx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	put := func(k, v string) int64 {
		t.Helper()
		r, err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce %s=%s: %v", k, v, err)
		}
		return r.Offset
	}
	txn := func(cl *kgo.Client, kvs ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kvs); i += 2 {
			r := &kgo.Record{Topic: "ctx", Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
	}
	end := func(cl *kgo.Client, commit bool) {
		t.Helper()
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	put("a", "a-committed")
	p1 := txnProducer(t, n.addr, "t1")
	txn(p1, "a", "a-aborted", "b", "b-aborted")
	end(p1, false)
	txn(p1, "c", "c-committed")
	end(p1, true)
	for i := range 100 { // the segment closes
		put("f", fmt.Sprintf("f-%d", i))
	}
	p2 := txnProducer(t, n.addr, "t2")
	txn(p2, "d", "d-open")
	put("d", "d-plain")
	last := int64(0)
	for i := range 200 { // a few segments
		last = put("f", fmt.Sprintf("g-%d", i))
	}
	if _, err := n.core.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	read := func(iso kgo.IsolationLevel, upTo int64) []string {
		t.Helper()
		cl := newClient(t, n.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ctx": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(iso))
		var got []string
		for done := false; !done; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("read: %v (read %q)", err, got)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if !strings.HasPrefix(string(r.Value), "f-") && !strings.HasPrefix(string(r.Value), "g-") {
					got = append(got, string(r.Value))
				}
				done = done || r.Offset >= upTo
			})
		}
		return got
	}
	got := read(kgo.ReadUncommitted(), last)
	if want := []string{"a-committed", "c-committed", "d-open", "d-plain"}; !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted after the clean: %q, want %q", got, want)
	}
	end(p2, true)
	after := put("f", "f-after")
	if got := read(kgo.ReadCommitted(), after); !slices.Contains(got, "d-open") || slices.Contains(got, "a-aborted") {
		t.Fatalf("read_committed after the commit: %q", got)
	}
}

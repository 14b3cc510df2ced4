package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
)

// createKV creates a compacted topic of parts partitions.
func createKV(t *testing.T, b *broker.Broker, pr broker.Principal, name string, parts int32, segmentBytes int64) {
	t.Helper()
	c := partition.DefaultConfig(name)
	c.Partitions = parts
	c.Cleanup = partition.DefaultCleanup()
	c.Cleanup.Policy = partition.CleanupCompact
	if segmentBytes > 0 {
		c.SegmentBytes = segmentBytes
	}
	if _, err := b.CreateTopic(context.Background(), pr, c); err != nil {
		t.Fatal(err)
	}
}

func kvPut(t *testing.T, b *broker.Broker, topic, key, value string) broker.KVPutResult {
	t.Helper()
	res, err := b.KVPut(context.Background(), "", topic, broker.KVPut{Key: []byte(key), Value: []byte(value)})
	if err != nil {
		t.Fatalf("put %s=%s: %v", key, value, err)
	}
	return res
}

func kvWant(t *testing.T, b *broker.Broker, topic, key, value string) broker.KVRecord {
	t.Helper()
	rec, ok, err := b.KVGet(context.Background(), "", topic, []byte(key), broker.KVGetOptions{})
	if err != nil || !ok || string(rec.Value) != value {
		t.Fatalf("get %s = %q (found %v, err %v), want %q", key, rec.Value, ok, err, value)
	}
	return rec
}

func kvWantAbsent(t *testing.T, b *broker.Broker, topic, key string) {
	t.Helper()
	rec, ok, err := b.KVGet(context.Background(), "", topic, []byte(key), broker.KVGetOptions{})
	if err != nil || ok {
		t.Fatalf("get %s = %q at %d (found %v, err %v), want absent", key, rec.Value, rec.Offset, ok, err)
	}
}

// Puts, deletes and plain produces of a compacted topic read back by key:
// the newest value of each, none after a delete, across partitions.
func TestKVPutGetDelete(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 4, 0)
	for i := range 20 {
		kvPut(t, b, "cfg", fmt.Sprintf("k%02d", i), "v1")
	}
	res := kvPut(t, b, "cfg", "k03", "v2")
	rec := kvWant(t, b, "cfg", "k03", "v2")
	if rec.Offset != res.Offset || rec.Partition != res.Partition {
		t.Fatalf("get k03 at %d/%d, the put stored it at %d/%d", rec.Partition, rec.Offset, res.Partition, res.Offset)
	}
	kvWant(t, b, "cfg", "k04", "v1")
	if _, err := b.KVDelete(ctx, "", "cfg", []byte("k04"), nil); err != nil {
		t.Fatal(err)
	}
	kvWantAbsent(t, b, "cfg", "k04")
	kvWantAbsent(t, b, "cfg", "never")
	// A record produced by other means is the key's newest too.
	if _, err := b.ProduceRecords(ctx, broker.RecordsRequest{Topic: "cfg", ProducerID: -1,
		Records: []broker.Record{{Partition: broker.AnyPartition, Key: []byte("k05"), Value: []byte("kafka")}}}); err != nil {
		t.Fatal(err)
	}
	kvWant(t, b, "cfg", "k05", "kafka")
}

func TestKVRefusesBadRequests(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "plain", 1)
	createKV(t, b, "", "cfg", 1, 0)
	_, _, err := b.KVGet(ctx, "", "plain", []byte("k"), broker.KVGetOptions{})
	if !errors.Is(err, kind.ErrFailedPrecondition) || !strings.Contains(err.Error(), "not compacted") {
		t.Fatalf("get on a delete topic: %v, want a failed precondition saying it is not compacted", err)
	}
	if _, err := b.KVPut(ctx, "", "plain", broker.KVPut{Key: []byte("k"), Value: []byte("v")}); !errors.Is(err, kind.ErrFailedPrecondition) {
		t.Fatalf("put on a delete topic: %v", err)
	}
	if _, _, err := b.KVGet(ctx, "", "nope", []byte("k"), broker.KVGetOptions{}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("get on a missing topic: %v", err)
	}
	if _, _, err := b.KVGet(ctx, "", "cfg", nil, broker.KVGetOptions{}); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("get of an empty key: %v", err)
	}
	bad := int64(-7)
	if _, err := b.KVPut(ctx, "", "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("v"), Expected: &bad}); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("put expecting offset -7: %v", err)
	}
	if _, err := b.KVList(ctx, "", "cfg", broker.KVListRequest{Limit: broker.KVListMax + 1}); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("list over the limit: %v", err)
	}
}

// A principal without read is refused a get and a list, without write a
// put, and a conditional put needs both; nothing is stored.
func TestKVRefusesPrincipal(t *testing.T) {
	b := openSecured(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	createKV(t, b, admin, "cfg", 1, 0)
	cfg := auth.Topic("cfg")
	_, _, err := b.KVGet(ctx, alice, "cfg", []byte("k"), broker.KVGetOptions{})
	checkDenied(t, "get", err, allow(auth.OpRead, cfg))
	_, err = b.KVList(ctx, alice, "cfg", broker.KVListRequest{})
	checkDenied(t, "list", err, allow(auth.OpRead, cfg))
	_, err = b.KVPut(ctx, alice, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("v")})
	checkDenied(t, "put", err, allow(auth.OpWrite, cfg))
	if err := b.AddACLs(ctx, admin, allow(auth.OpWrite, cfg)); err != nil {
		t.Fatal(err)
	}
	absent := broker.KVAbsent
	_, err = b.KVPut(ctx, alice, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("v"), Expected: &absent})
	checkDenied(t, "conditional put without read", err, allow(auth.OpRead, cfg))
	if _, ok, err := b.KVGet(ctx, admin, "cfg", []byte("k"), broker.KVGetOptions{}); ok || err != nil {
		t.Fatalf("a refused put stored the key (found %v, err %v)", ok, err)
	}
	if _, err := b.KVPut(ctx, alice, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatalf("put with write: %v", err)
	}
}

// Of N conditional puts expecting the same offset, exactly one wins; the
// others are refused naming the winner's offset.
func TestKVConditionalPutExactlyOneWins(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 2, 0)
	const n = 16
	race := func(expected int64) (wins []broker.KVPutResult, conflicts []*broker.KeyConflictError) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := b.KVPut(ctx, "", "cfg", broker.KVPut{Key: []byte("lock"), Value: fmt.Appendf(nil, "owner-%d", i), Expected: &expected})
				mu.Lock()
				defer mu.Unlock()
				var ce *broker.KeyConflictError
				switch {
				case err == nil:
					wins = append(wins, res)
				case errors.As(err, &ce) && errors.Is(err, kind.ErrFailedPrecondition):
					conflicts = append(conflicts, ce)
				default:
					t.Errorf("put %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return wins, conflicts
	}
	expected := broker.KVAbsent
	for round := range 3 {
		wins, conflicts := race(expected)
		if len(wins) != 1 || len(conflicts) != n-1 {
			t.Fatalf("round %d: %d puts won, %d refused; want exactly 1 and %d", round, len(wins), len(conflicts), n-1)
		}
		for _, c := range conflicts {
			if c.Latest != wins[0].Offset || c.Expected != expected {
				t.Fatalf("round %d: refusal %v, want latest %d expected %d", round, c, wins[0].Offset, expected)
			}
		}
		want := fmt.Sprintf("the key's latest offset is %d, not %s", wins[0].Offset, strings.TrimSuffix(fmt.Sprint(expected), ""))
		if expected >= 0 && !strings.Contains(conflicts[0].Error(), want) {
			t.Fatalf("refusal %q, want it to say %q", conflicts[0].Error(), want)
		}
		rec, _, _ := b.KVGet(ctx, "", "cfg", []byte("lock"), broker.KVGetOptions{})
		if rec.Offset != wins[0].Offset {
			t.Fatalf("round %d: the key is at %d, the winner stored it at %d", round, rec.Offset, wins[0].Offset)
		}
		expected = wins[0].Offset
	}
	// A conditional delete of the current offset removes the key.
	if _, err := b.KVDelete(ctx, "", "cfg", []byte("lock"), &expected); err != nil {
		t.Fatal(err)
	}
	kvWantAbsent(t, b, "cfg", "lock")
}

// The view stays right after the cleaner compacts the partition: the
// newest value of every key, none of a deleted key.
func TestKVAfterCompaction(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 1, 4096)
	for i := range 400 {
		kvPut(t, b, "cfg", fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i))
	}
	kvWant(t, b, "cfg", "k1", "v393") // the index reads it all once
	if _, err := b.KVDelete(ctx, "", "cfg", []byte("k2"), nil); err != nil {
		t.Fatal(err)
	}
	for i := 400; i < 420; i++ {
		kvPut(t, b, "cfg", fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i))
	}
	// The background cleaner may have compacted some segments already.
	if _, err := b.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := b.Topic(ctx, "", "cfg")
	if written := int64(421 * len(keyed("k0", "v100"))); err != nil || info.Partitions[0].SizeBytes*2 > written {
		t.Fatalf("partition of %d bytes after compaction (%v), %d written: want it at most half", info.Partitions[0].SizeBytes, err, written)
	}
	for k := range 7 {
		kvWant(t, b, "cfg", fmt.Sprintf("k%d", k), fmt.Sprintf("v%d", 413+k)) // 413 = 59*7
	}
	page, err := b.KVList(ctx, "", "cfg", broker.KVListRequest{})
	if err != nil || len(page.Records) != 7 {
		t.Fatalf("list: %d records, %v; want 7 (k2 put again after its delete)", len(page.Records), err)
	}
}

// A list pages through the keys with a prefix in key order across
// partitions.
func TestKVListPages(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 3, 0)
	var want []string
	for i := range 25 {
		kvPut(t, b, "cfg", fmt.Sprintf("app/%02d", i), fmt.Sprint(i))
		kvPut(t, b, "cfg", fmt.Sprintf("other/%02d", i), "x")
		want = append(want, fmt.Sprintf("app/%02d=%d", i, i))
	}
	if _, err := b.KVDelete(ctx, "", "cfg", []byte("app/07"), nil); err != nil {
		t.Fatal(err)
	}
	want = append(want[:7], want[8:]...)
	var got []string
	req := broker.KVListRequest{Prefix: []byte("app/"), Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("too many pages")
		}
		page, err := b.KVList(ctx, "", "cfg", req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
		}
		if !page.More {
			break
		}
		req.After = page.Last
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages =\n%v\nwant\n%v", got, want)
	}
}

// A watch sees the puts and deletes of the keys with its prefix made
// after it began, in order, and nothing else.
func TestKVWatch(t *testing.T) {
	b := open(t)
	createKV(t, b, "", "cfg", 1, 0)
	kvPut(t, b, "cfg", "app/before", "x")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- b.AnyNode().KVWatch(ctx, "", "cfg", []byte("app/"), func(r broker.KVRecord) error {
			v := string(r.Value)
			if r.Value == nil {
				v = "<deleted>"
			}
			events <- fmt.Sprintf("%s=%s", r.Key, v)
			return nil
		})
	}()
	// The watch starts at the end of the log when it begins: probe until
	// it sees a put.
	for seen := false; !seen; {
		kvPut(t, b, "cfg", "app/probe", "p")
		select {
		case <-events:
			seen = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	for len(events) > 0 {
		<-events
	}
	kvPut(t, b, "cfg", "other/k", "no")
	kvPut(t, b, "cfg", "app/k", "v1")
	if _, err := b.KVDelete(context.Background(), "", "cfg", []byte("app/k"), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		got = append(got, <-events)
	}
	if fmt.Sprint(got) != "[app/k=v1 app/k=<deleted>]" {
		t.Fatalf("events %v", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v, want context.Canceled", err)
	}
}

// A put retried by its writer (the same producer id and epoch) after it
// was stored is answered with the first attempt's offset and stores
// nothing: a put in between stays the key's newest. The writer's next
// epoch is a new put.
func TestKVPutRetryByItsWriterIsStoredOnce(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 1, 0)
	w := broker.KVWriter{ID: 77, Epoch: 0}
	put := broker.KVPut{Key: []byte("k"), Value: []byte("first"), Writer: w}
	first, err := b.KVPut(ctx, "", "cfg", put)
	if err != nil {
		t.Fatal(err)
	}
	between := kvPut(t, b, "cfg", "k", "between")
	retry, err := b.KVPut(ctx, "", "cfg", put)
	if err != nil {
		t.Fatal(err)
	}
	if retry.Offset != first.Offset {
		t.Fatalf("the retry answered offset %d, the first attempt stored %d", retry.Offset, first.Offset)
	}
	if rec := kvWant(t, b, "cfg", "k", "between"); rec.Offset != between.Offset {
		t.Fatalf("k at %d, the put in between stored it at %d", rec.Offset, between.Offset)
	}
	// A delete by the same writer at its next epoch is a new write.
	if _, err := b.KVPut(ctx, "", "cfg", broker.KVPut{Key: []byte("k"), Writer: broker.KVWriter{ID: 77, Epoch: 1}}); err != nil {
		t.Fatal(err)
	}
	kvWantAbsent(t, b, "cfg", "k")
}

// A retry of a compare-and-set its writer stored already is answered
// with the first attempt's offset, though the key moved on since (the
// first attempt, or a put after it, changed what the condition tests);
// another writer's put with the same stale expectation is refused.
func TestKVCompareAndSetRetryByItsWriterIsAnswered(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createKV(t, b, "", "cfg", 1, 0)
	absent := broker.KVAbsent
	put := broker.KVPut{Key: []byte("k"), Value: []byte("first"), Expected: &absent, Writer: broker.KVWriter{ID: 78}}
	first, err := b.KVPut(ctx, "", "cfg", put)
	if err != nil {
		t.Fatal(err)
	}
	kvPut(t, b, "cfg", "k", "after")
	retry, err := b.KVPut(ctx, "", "cfg", put)
	if err != nil || retry.Offset != first.Offset {
		t.Fatalf("the retry: offset %d, %v; want the first attempt's %d", retry.Offset, err, first.Offset)
	}
	other := put
	other.Writer = broker.KVWriter{ID: 79}
	var conflict *broker.KeyConflictError
	if _, err := b.KVPut(ctx, "", "cfg", other); !errors.As(err, &conflict) {
		t.Fatalf("another writer's put expecting no value: %v, want a key conflict", err)
	}
}

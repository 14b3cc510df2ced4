package kafka

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer serves core on 127.0.0.1 until the test ends.
func startServer(t *testing.T, core Core, cfg Config) *Server {
	t.Helper()
	cfg.Core = core
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newClient is a franz-go client of addr that does not compress unless
// opts say so (compressed produce has its own tests).
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAPIVersionsAdvertisesTheTable(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{})
	cl := newClient(t, s.Addr().String())
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("error %d, %d keys, want %d", resp.ErrorCode, len(resp.ApiKeys), len(apis))
	}
	for _, k := range resp.ApiKeys {
		a := apis[k.ApiKey]
		if k.MinVersion != a.min || k.MaxVersion != a.max {
			t.Errorf("key %d: advertised %d-%d, table %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, a.min, a.max)
		}
	}
}

func TestProduceConsumeWithKgo(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("events"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const count = 100
	for i := 0; i < count; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprint("k", i%7)), Value: []byte(fmt.Sprint("v", i))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, n.addr, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < count {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), count, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	offs, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offs.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != count {
		t.Fatalf("end offsets sum to %d, want %d", total, count)
	}
}

func TestGroupConsumeWithKgo(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("orders"))
	for i := 0; i < 20; i++ {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, n.addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for got < 20 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 20: %v", got, err)
		}
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(0)
	committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 20 {
		t.Fatalf("committed offsets sum to %d, want 20", sum)
	}
	groups, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if g := groups["g1"]; g.State != "Stable" || len(g.Members) != 1 {
		t.Fatalf("group g1: state %q, %d members", g.State, len(g.Members))
	}
}

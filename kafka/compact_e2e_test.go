package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A compacted topic end to end with franz-go: kadm creates it with small
// segments, keyed records are produced over and over, the cleaner runs,
// and a consumer reading from the start gets, below the active segment,
// only the newest record of each key, at its original offset (so the
// offsets have gaps), and the newest value of every key overall. A
// keyless record is refused with INVALID_RECORD.
func TestCompactedTopicWithFranzGo(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("4096"),
	}, "kv")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("kv"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const total, keys = 400, 10
	latest := map[string]string{}
	for i := range total {
		k, v := fmt.Sprintf("key-%d", i%keys), fmt.Sprintf("value-%d", i)
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		latest[k] = v
	}
	err = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}
	if _, err := n.core.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	active, err := n.core.ActiveSegmentBaseForTest("kv", 0)
	if err != nil {
		t.Fatal(err)
	}

	cons := newClient(t, n.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kv": {0: kgo.NewOffset().AtStart()}}))
	got, offsets := map[string]string{}, []int64{}
	closedKeys := map[string]int{}
	for len(offsets) == 0 || offsets[len(offsets)-1] < total-1 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			offsets = append(offsets, r.Offset)
			if r.Offset < active {
				closedKeys[string(r.Key)]++
			}
			if want := fmt.Sprintf("value-%d", r.Offset); string(r.Value) != want {
				t.Errorf("offset %d holds %q, want %q: a record moved", r.Offset, r.Value, want)
			}
		})
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s: read %q last, want its newest %q", k, got[k], v)
		}
	}
	for k, c := range closedKeys {
		if c > 1 {
			t.Errorf("key %s: %d records below the active segment (base %d), want 1", k, c, active)
		}
	}
	if len(offsets) >= total || active < keys {
		t.Fatalf("read %d of %d records (active segment at %d): nothing compacted", len(offsets), total, active)
	}
	t.Logf("read %d of %d records; the active segment starts at %d", len(offsets), total, active)
}

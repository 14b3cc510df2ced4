package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

func openTopics(t *testing.T, dir string) (*Topics, *pebble.DB) {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := Open(Options{DataDir: dir, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	return tp, db
}

func closeTopics(t *testing.T, tp *Topics, db *pebble.DB) {
	t.Helper()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendOne(t *testing.T, p *Partition, prod batch.Producer, n int) AppendResult {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1, Value: []byte("v")}
	}
	c, err := batch.Validate(batch.Encode(nil, 0, prod, recs))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTopicLifecycleSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	tp, db := openTopics(t, dir)
	c := DefaultConfig("orders")
	c.Partitions = 3
	if _, err := tp.Create(c); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Create(c); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	bad := DefaultConfig("x")
	bad.Partitions = 0
	if _, err := tp.Create(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("zero partitions: %v", err)
	}
	p, err := tp.Partition("orders", 2)
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, p, batch.NoProducer, 5)
	rec := int64(100)
	if _, err := tp.Alter("orders", ConfigChange{RetentionRecords: &rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Partition("orders", 3); !errors.Is(err, ErrPartitionNotFound) {
		t.Fatalf("partition 3: %v", err)
	}
	closeTopics(t, tp, db)

	tp, db = openTopics(t, dir)
	got, err := tp.Config("orders")
	if err != nil || got.Partitions != 3 || got.RetentionRecords != 100 {
		t.Fatalf("after restart: %v %+v", err, got)
	}
	p, _ = tp.Partition("orders", 2)
	if p.Log.HighWatermark() != 5 {
		t.Fatalf("hw %d after restart", p.Log.HighWatermark())
	}
	if err := tp.Delete("orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partitions", "orders-0")); !os.IsNotExist(err) {
		t.Fatalf("partition dir left after delete: %v", err)
	}
	if err := tp.Delete("orders"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	closeTopics(t, tp, db)
}

func TestLeftoversRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"gone-0.deleted", "halfcreated-0", "keep-0"} {
		if err := os.MkdirAll(filepath.Join(dir, "partitions", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "partitions", "keep-0", "00000000000000000000.log"), []byte("x"), 0o644)
	tp, db := openTopics(t, dir)
	defer closeTopics(t, tp, db)
	ents, _ := os.ReadDir(filepath.Join(dir, "partitions"))
	if len(ents) != 1 || ents[0].Name() != "keep-0" {
		t.Fatalf("left: %v (want only the non-empty unknown dir)", ents)
	}
}

func TestProducerDedup(t *testing.T) {
	dir := t.TempDir()
	tp, db := openTopics(t, dir)
	c := DefaultConfig("t")
	tp.Create(c)
	p, _ := tp.Partition("t", 0)
	prod := batch.Producer{ID: 5, Epoch: 0, Sequence: 0}
	first := appendOne(t, p, prod, 3) // seqs 0..2
	again := appendOne(t, p, prod, 3)
	if !again.Duplicate || again.BaseOffset != first.BaseOffset {
		t.Fatalf("retry: %+v", again)
	}
	prod.Sequence = 3
	appendOne(t, p, prod, 1) // seq 3
	// Keep more than five batches: an old retry is still a duplicate, with
	// unknown offsets.
	for s := int32(4); s < 10; s++ {
		prod.Sequence = s
		appendOne(t, p, prod, 1)
	}
	prod.Sequence = 0
	old := appendOne(t, p, prod, 3)
	if !old.Duplicate || old.BaseOffset != -1 {
		t.Fatalf("old retry: %+v", old)
	}
	// A gap is refused.
	gap, _ := batch.Validate(batch.Encode(nil, 0, batch.Producer{ID: 5, Sequence: 20}, []batch.Record{{Value: []byte("x")}}))
	if _, err := p.Append(gap); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	// A new epoch starts over.
	res := appendOne(t, p, batch.Producer{ID: 5, Epoch: 1, Sequence: 0}, 1)
	if res.Duplicate {
		t.Fatalf("new epoch treated as duplicate: %+v", res)
	}
	// An older epoch is fenced.
	fenced, _ := batch.Validate(batch.Encode(nil, 0, batch.Producer{ID: 5, Epoch: 0, Sequence: 10}, []batch.Record{{Value: []byte("x")}}))
	if _, err := p.Append(fenced); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("old epoch: %v", err)
	}
	hw := p.Log.HighWatermark()
	closeTopics(t, tp, db)

	// After a restart the state is rebuilt from the log.
	tp, db = openTopics(t, dir)
	defer closeTopics(t, tp, db)
	p, _ = tp.Partition("t", 0)
	res = appendOne(t, p, batch.Producer{ID: 5, Epoch: 1, Sequence: 0}, 1)
	if !res.Duplicate || p.Log.HighWatermark() != hw {
		t.Fatalf("retry after restart: %+v, hw %d want %d", res, p.Log.HighWatermark(), hw)
	}
}

// TestDedupAcrossRolledSegments: a retry after a restart is recognised
// when the original batch lies in a segment rolled since (not only in the
// active one).
func TestDedupAcrossRolledSegments(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Topics, *pebble.DB) {
		db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := Open(Options{DataDir: dir, DB: db, LogOptions: func(c TopicConfig) log.Options {
			return log.Options{SegmentBytes: c.SegmentBytes}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return tp, db
	}
	tp, db := open()
	c := DefaultConfig("t")
	c.SegmentBytes = MinSegmentBytes
	if _, err := tp.Create(c); err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition("t", 0)
	appendOne(t, p, batch.Producer{ID: 42, Sequence: 0}, 3)
	orig := appendOne(t, p, batch.Producer{ID: 42, Sequence: 3}, 2)
	for i := range 200 {
		appendOne(t, p, batch.Producer{ID: int64(100 + i%3), Sequence: int32(i / 3 * 5)}, 5)
	}
	if n := len(p.Log.Segments()); n < 3 {
		t.Fatalf("%d segments: the test needs the original in a rolled one", n)
	}
	closeTopics(t, tp, db)
	tp, db = open()
	defer closeTopics(t, tp, db)
	p, _ = tp.Partition("t", 0)
	again := appendOne(t, p, batch.Producer{ID: 42, Sequence: 3}, 2)
	if !again.Duplicate || again.BaseOffset != orig.BaseOffset {
		t.Fatalf("retry after restart: %+v, original %+v", again, orig)
	}
}

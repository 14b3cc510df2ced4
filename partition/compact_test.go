package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// An idempotent producer's dedup state survives compaction of its batches
// and a restart: its last batch, every record of which a newer one
// superseded, stays (empty) with its sequence, so a retry of it after the
// restart is answered with its original offsets and the producer's next
// sequence is taken.
func TestProducerStateSurvivesCompaction(t *testing.T) {
	dir := t.TempDir()
	opts := log.Options{SegmentBytes: 1024}
	l, err := log.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l)
	now := time.Now().UnixMilli()
	keyed := func(prod batch.Producer, keys ...string) batch.Checked {
		recs := make([]batch.Record, len(keys))
		for i, k := range keys {
			recs[i] = batch.Record{Timestamp: now, Key: []byte(k), Value: fmt.Appendf(nil, "%s@%d", k, prod.Sequence)}
		}
		c, err := batch.Validate(batch.Encode(nil, 0, prod, recs))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	prod := func(seq int32) batch.Producer { return batch.Producer{ID: 7, Epoch: 1, Sequence: seq} }
	if _, err := p.Append(keyed(prod(0), "a", "b")); err != nil {
		t.Fatal(err)
	}
	orig, err := p.Append(keyed(prod(2), "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	// Another producer's records supersede both of producer 7's batches,
	// and roll them into closed segments.
	for i := range 40 {
		if _, err := p.Append(keyed(batch.NoProducer, "a", "b", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Compact(log.CompactOptions{Below: l.HighWatermark()})
	if err != nil || res.Segments == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if b, err := l.Read(orig.BaseOffset, 1<<20); err != nil || len(b) == 0 {
		t.Fatalf("read the compacted batch: %v", err)
	} else if info, _ := batch.ParseHeader(b); info.BaseOffset != orig.BaseOffset || info.NumRecords != 0 {
		t.Errorf("producer 7's last batch after the clean: %+v, want it empty at %d", info, orig.BaseOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = log.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p = newPartition("t", 0, l)
	if err := p.RebuildProducers(); err != nil {
		t.Fatal(err)
	}
	again, err := p.Append(keyed(prod(2), "a", "b"))
	if err != nil || !again.Duplicate || again.BaseOffset != orig.BaseOffset {
		t.Fatalf("retry after the clean and a restart: %+v %v, want a duplicate of %+v", again, err, orig)
	}
	if _, err := p.Append(keyed(prod(5), "a")); err == nil {
		t.Fatal("a sequence gap after the restart was taken")
	}
	if res, err := p.Append(keyed(prod(4), "a")); err != nil || res.Duplicate {
		t.Fatalf("the next sequence after the restart: %+v %v", res, err)
	}
}

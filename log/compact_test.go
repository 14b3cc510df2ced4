package log

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// kvBatch is one batch of one record, key k (nil: none) and value v (nil:
// a tombstone), at time ts.
func kvBatch(k, v []byte, ts int64) []byte {
	return batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: ts, Key: k, Value: v}})
}

// readKept reads every record from the log start to the high watermark,
// stepping over compacted gaps, checking that offsets only grow.
func readKept(t *testing.T, l *Log) []batch.Record {
	t.Helper()
	var out []batch.Record
	off := l.StartOffset()
	for off < l.HighWatermark() {
		b, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("read %d below the high watermark %d: nothing", off, l.HighWatermark())
		}
		err = batch.Split(b, func(raw []byte, info batch.Info) error {
			_, recs, err := batch.Decode(raw, off)
			if err != nil {
				return err
			}
			if info.BaseOffset < off && len(recs) == 0 {
				return fmt.Errorf("batch %d..%d before offset %d", info.BaseOffset, info.LastOffset(), off)
			}
			out = append(out, recs...)
			off = info.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
	}
	return out
}

// fillKeys appends n one-record batches cycling over keys k0..k(keys-1),
// value "v<i>", at ts0+i ms, and returns the log's segments after.
func fillKeys(t *testing.T, l *Log, n, keys int, ts0 int64) {
	t.Helper()
	for i := range n {
		mustAppend(t, l, kvBatch(fmt.Appendf(nil, "k%d", i%keys), fmt.Appendf(nil, "v%d", i), ts0+int64(i)))
	}
}

// checkCompacted checks what a full compaction of the segments below
// activeBase left: one record per key there, its newest below activeBase,
// each at the offset it was written at (value "v<offset>").
func checkCompacted(t *testing.T, recs []batch.Record, activeBase, hw int64) {
	t.Helper()
	newest := map[string]int64{}
	for _, r := range recs {
		if r.Offset < activeBase {
			newest[string(r.Key)] = max(newest[string(r.Key)], r.Offset)
		}
	}
	for _, r := range recs {
		if r.Offset < activeBase && r.Offset != newest[string(r.Key)] {
			t.Errorf("offset %d (key %s) kept though the key's newest closed record is %d", r.Offset, r.Key, newest[string(r.Key)])
		}
		if fmt.Sprintf("v%d", r.Offset) != string(r.Value) {
			t.Errorf("offset %d holds %q: a record moved", r.Offset, r.Value)
		}
	}
	// The active segment is never touched: every offset in it is there.
	n := int64(0)
	for _, r := range recs {
		if r.Offset >= activeBase {
			n++
		}
	}
	if n != hw-activeBase {
		t.Errorf("%d records at or after the active segment's base %d, want %d", n, activeBase, hw-activeBase)
	}
}

func activeBase(l *Log) int64 {
	segs := l.Segments()
	return segs[len(segs)-1].BaseOffset
}

// Compaction keeps, in the closed segments, only the newest record of
// each key, at its offset; reads step over the gaps; the active segment
// and Raft indexes are untouched; all of it survives a reopen.
func TestCompactKeepsNewestPerKey(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 1024})
	fillKeys(t, l, 200, 7, 1000)
	before := l.Segments()
	var size int64
	for _, s := range before {
		size += s.Size
	}
	res, err := l.Compact(CompactOptions{Below: l.HighWatermark(), Now: time.UnixMilli(10_000)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments == 0 || res.Reclaimed <= 0 || res.Removed == 0 || res.Passes != 1 {
		t.Fatalf("result %+v: nothing compacted", res)
	}
	after := l.Segments()
	for i := range before {
		b, a := before[i], after[i]
		if a.BaseOffset != b.BaseOffset || a.NextOffset != b.NextOffset || a.FirstIndex != b.FirstIndex || a.Entries != b.Entries {
			t.Fatalf("segment %d changed shape: %+v -> %+v", i, b, a)
		}
	}
	recs := readKept(t, l)
	checkCompacted(t, recs, activeBase(l), l.HighWatermark())
	if len(recs) >= 200 {
		t.Fatalf("%d records left of 200", len(recs))
	}
	// A read inside a gap answers the next batch kept.
	gap := int64(0)
	for gap < int64(len(recs)) && recs[gap].Offset == gap {
		gap++
	}
	b, err := l.Read(gap, 1<<20)
	if err != nil || len(b) == 0 {
		t.Fatalf("read in the gap at %d: %v", gap, err)
	}
	if info, _ := batch.ParseHeader(b); info.BaseOffset <= gap {
		t.Fatalf("read at %d answered batch %d", gap, info.BaseOffset)
	}
	// Raft: a compacted entry is not found (Raft sends its snapshot); a
	// kept one is read.
	_, err = l.Entry(after[0].FirstIndex + uint64(gap))
	wantErrIs(t, err, ErrNotFound)
	if e, err := l.Entry(after[len(after)-1].FirstIndex); err != nil || e.Kind != KindBatch {
		t.Fatalf("entry of the active segment: %+v %v", e, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, fs.crash(), Options{SegmentBytes: 1024})
	defer l.Close()
	if again := readKept(t, l); !slices.EqualFunc(again, recs, sameRecord) {
		t.Fatalf("after reopen %d records, before %d", len(again), len(recs))
	}
}

func sameRecord(a, b batch.Record) bool {
	return a.Offset == b.Offset && string(a.Key) == string(b.Key) && string(a.Value) == string(b.Value)
}

// A tombstone stays, as the key's newest record, until DeleteRetention
// after its segment was first cleaned (Kafka's delete horizon, whatever
// the tombstone's own timestamp); then it goes with the key. The horizon
// is stamped durably: a crash and reopen between the cleans does not move
// it. Keyless records go at the first clean.
func TestCompactTombstones(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 256}
	l := mustOpen(t, fs, opts)
	mustAppend(t, l, kvBatch([]byte("old"), []byte("v0"), 1000))
	mustAppend(t, l, kvBatch([]byte("old"), nil, 2000)) // tombstone at 2s
	mustAppend(t, l, kvBatch([]byte("new"), []byte("v2"), 3000))
	mustAppend(t, l, kvBatch([]byte("new"), nil, 60_000)) // tombstone at 60s
	mustAppend(t, l, kvBatch(nil, []byte("keyless"), 61_000))
	mustAppend(t, l, kvBatch([]byte("live"), []byte("v5"), 62_000))
	fillKeys(t, l, 20, 1, 70_000) // later segments, the last active
	kept := func(l *Log) []string {
		var got []string
		for _, r := range readKept(t, l) {
			if r.Offset < 6 {
				got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value))
			}
		}
		return got
	}
	compact := func(l *Log, now int64) {
		t.Helper()
		if _, err := l.Compact(CompactOptions{Below: 6, Now: time.UnixMilli(now), DeleteRetention: 50 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	// The first clean stamps the segments at 100s: both tombstones stay,
	// though old's is 98s old.
	compact(l, 100_000)
	want := []string{"1:old=", "3:new=", "5:live=v5"}
	if got := kept(l); !slices.Equal(got, want) {
		t.Fatalf("after the first clean: kept %q, want %q", got, want)
	}
	l.Close()
	l = mustOpen(t, fs.crash(), opts)
	defer l.Close()
	compact(l, 149_999)
	if got := kept(l); !slices.Equal(got, want) {
		t.Fatalf("before the horizon (after a reopen): kept %q, want %q", got, want)
	}
	compact(l, 150_000)
	want = []string{"5:live=v5"}
	if got := kept(l); !slices.Equal(got, want) {
		t.Fatalf("at the horizon: kept %q, want %q", got, want)
	}
}

// More keys than the key map holds: more passes, the same result.
func TestCompactPassesWhenKeysExceedTheMap(t *testing.T) {
	run := func(entries int) ([]batch.Record, CompactResult) {
		l := mustOpen(t, newFaultFS(), Options{SegmentBytes: 512})
		defer l.Close()
		fillKeys(t, l, 300, 40, 0)
		res, err := l.Compact(CompactOptions{Below: l.HighWatermark(), MapEntries: entries})
		if err != nil {
			t.Fatal(err)
		}
		return readKept(t, l), res
	}
	big, bres := run(0)
	small, sres := run(7)
	if bres.Passes != 1 || sres.Passes < 2 {
		t.Fatalf("passes: %d with a large map, %d with 7 entries", bres.Passes, sres.Passes)
	}
	if !slices.EqualFunc(big, small, sameRecord) {
		t.Fatalf("%d records kept with a large map, %d with a small one", len(big), len(small))
	}
}

// A crash (kill -9: only what was synced survives) after each step of a
// segment's swap leaves every segment old or new, never a mix: what the
// reopened log reads is what it read before the compaction or after it,
// segment by segment, and a second compaction finishes the job.
func TestCompactCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"written", "renamed", "dirsynced", "stamped"} {
		t.Run(step, func(t *testing.T) {
			fs := newFaultFS()
			l := mustOpen(t, fs, Options{SegmentBytes: 1024})
			fillKeys(t, l, 120, 5, 0)
			old := readKept(t, l)
			errCrash := errors.New("crash")
			n := 0
			_, err := l.Compact(CompactOptions{Below: l.HighWatermark(), Step: func(s string) error {
				if s == step {
					if n++; n == 2 || s == "stamped" { // the second segment's swap, the pass's end
						return errCrash
					}
				}
				return nil
			}})
			wantErrIs(t, err, errCrash)
			l2 := mustOpen(t, fs.crash(), Options{SegmentBytes: 1024})
			defer l2.Close()
			got := readKept(t, l2)
			// Every old record is either kept or in a segment that
			// was rewritten; nothing appears that was not there.
			for _, r := range got {
				if i := slices.IndexFunc(old, func(o batch.Record) bool { return o.Offset == r.Offset }); i < 0 || !sameRecord(old[i], r) {
					t.Fatalf("offset %d read after the crash was not in the log", r.Offset)
				}
			}
			if _, err := l2.Compact(CompactOptions{Below: l2.HighWatermark()}); err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, readKept(t, l2), activeBase(l2), l2.HighWatermark())
		})
	}
}

// EpochEnd (Kafka's OffsetForLeaderEpoch) answers on a compacted log: a
// probe that lands in a gap moves on.
func TestCompactEpochEndOverGaps(t *testing.T) {
	l := mustOpen(t, newFaultFS(), Options{SegmentBytes: 1024})
	defer l.Close()
	fillKeys(t, l, 150, 3, 0)
	if _, err := l.Compact(CompactOptions{Below: l.HighWatermark()}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []int32{0, 5} {
		found, end, err := l.EpochEnd(e)
		if err != nil || end != l.HighWatermark() || found > e {
			t.Fatalf("EpochEnd(%d) = %d, %d, %v; want the high watermark %d", e, found, end, err, l.HighWatermark())
		}
	}
}

// A deleted key does not come back: an older value of b that shares a
// batch with a's newest value is removed by its tombstone, so when the
// tombstone expires b is gone, not back at its older value (a clean that
// kept whole batches did bring it back).
func TestCompactDeletedKeyStaysDeleted(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 256}
	l := mustOpen(t, fs, opts)
	defer l.Close()
	mustAppend(t, l, batch.Encode(nil, 0, batch.NoProducer, []batch.Record{
		{Timestamp: 1000, Key: []byte("a"), Value: []byte("1")},
		{Timestamp: 1000, Key: []byte("b"), Value: []byte("1")},
	}))
	mustAppend(t, l, kvBatch([]byte("b"), nil, 2000))
	fillKeys(t, l, 20, 1, 3000) // later segments, the last active
	for _, now := range []int64{100_000, 200_000} {
		if _, err := l.Compact(CompactOptions{Below: 22, Now: time.UnixMilli(now), DeleteRetention: 50 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range readKept(t, l) {
		if string(r.Key) == "b" {
			t.Fatalf("key b is back at offset %d (value %q) after its tombstone expired", r.Offset, r.Value)
		}
	}
}

package log

import (
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

func TestReadContract(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 400})
	defer l.Close()
	var infos []batch.Info
	for i := 0; i < 12; i++ {
		infos = append(infos, mustAppend(t, l, testBatch(3, int64(i), 30)))
	}
	// An offset inside a batch returns the whole batch holding it.
	b, err := l.Read(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := batch.ParseHeader(b); got.BaseOffset != 3 || len(b) != infos[1].Size() {
		t.Fatalf("read 4: batch at %d, %d bytes", got.BaseOffset, len(b))
	}
	// maxBytes is honoured after the first batch.
	b, _ = l.Read(0, 2*infos[0].Size())
	if len(b) != 2*infos[0].Size() {
		t.Fatalf("read with room for two batches: %d bytes", len(b))
	}
	// At the high watermark: nothing, no error.
	if b, err := l.Read(36, 100); err != nil || len(b) != 0 {
		t.Fatalf("read at hw: %d bytes, %v", len(b), err)
	}
	var oor *OutOfRangeError
	if _, err := l.Read(37, 100); !errors.As(err, &oor) || oor.HighWatermark != 36 || oor.StartOffset != 0 || oor.Offset != 37 {
		t.Fatalf("read past hw: %v", err)
	}
	if _, err := l.DeleteSegmentsBefore(12); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("nothing deleted")
	}
	if _, err := l.Read(start-1, 100); !errors.As(err, &oor) || oor.StartOffset != start || !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// Invalid batches are refused, the log unchanged.
	bad := testBatch(1, 0, 1)
	bad[len(bad)-1] ^= 1
	if _, err := l.Append(bad); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append with a bad crc: %v", err)
	}
	if _, err := l.Append(bad[:30]); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of a short batch: %v", err)
	}
	if _, err := l.Append(batch.Encode(nil, 0, batch.NoProducer, nil)); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of an empty batch: %v", err)
	}
	if l.NextOffset() != 36 {
		t.Fatalf("next offset %d", l.NextOffset())
	}
}

func TestOffsetForTime(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 500, IndexIntervalBytes: 100})
	defer l.Close()
	// Timestamps out of order inside and across batches.
	tss := [][]int64{{100, 90, 110}, {50, 300}, {200}, {150, 400, 120}, {400}}
	for _, ts := range tss {
		recs := make([]batch.Record, len(ts))
		for i := range ts {
			recs[i] = batch.Record{Timestamp: ts[i], Value: make([]byte, 60)}
		}
		mustAppend(t, l, batch.Encode(nil, 0, batch.NoProducer, recs))
	}
	for _, c := range []struct{ ts, want int64 }{
		{0, 0}, {90, 0}, {100, 0}, {101, 2}, {111, 4}, {300, 4}, {301, 7}, {400, 7}, {401, 10},
	} {
		if got, err := l.OffsetForTime(c.ts); err != nil || got != c.want {
			t.Errorf("offset for time %d: %d %v, want %d", c.ts, got, err, c.want)
		}
	}
}

func TestRollBySizeAndAge(t *testing.T) {
	fs := newFaultFS()
	now := time.Unix(1000, 0)
	l := mustOpen(t, fs, Options{SegmentBytes: 1 << 20, SegmentAge: time.Minute, Now: func() time.Time { return now }})
	defer l.Close()
	mustAppend(t, l, testBatch(1, 0, 1))
	now = now.Add(59 * time.Second)
	mustAppend(t, l, testBatch(1, 0, 1))
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments before the age", n)
	}
	now = now.Add(time.Second)
	mustAppend(t, l, testBatch(1, 0, 1))
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != 2 || !segs[1].Active || segs[0].Active {
		t.Fatalf("segments %+v", segs)
	}
	// Roll of a segment that owns no offset yet is a no-op.
	l2 := mustOpen(t, newFaultFS(), Options{})
	defer l2.Close()
	if err := l2.Roll(); err != nil || len(l2.Segments()) != 1 {
		t.Fatalf("roll of an empty segment: %v, %d segments", err, len(l2.Segments()))
	}
}

// TestOpenScansOnlyTheTail: Open reads closed segments' footers, not the
// segments.
func TestOpenScansOnlyTheTail(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 1000})
	for len(l.Segments()) < 30 {
		mustAppend(t, l, testBatch(4, 0, 50))
	}
	mustAppend(t, l, testBatch(4, 0, 50))
	segs := l.Segments()
	l.Close()
	l = mustOpen(t, fs, Options{SegmentBytes: 1000})
	defer l.Close()
	rep := l.Recovery()
	if rep.Segments != 30 || rep.ScannedBytes != segs[29].Size || rep.RebuiltIndexes != 0 {
		t.Fatalf("recovery %+v, want 30 segments and only %d bytes scanned", rep, segs[29].Size)
	}
	var total int64
	for _, s := range segs {
		total += s.Size
	}
	if l.Size() != total {
		t.Fatalf("size %d, want %d", l.Size(), total)
	}
}

// TestLeftoversCleaned: temp files from an interrupted index write and index
// files without a segment are removed on open.
func TestLeftoversCleaned(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 300})
	for len(l.Segments()) < 3 {
		mustAppend(t, l, testBatch(2, 0, 40))
	}
	l.Close()
	fs.setBytes(segName(0, indexSuffix)+tmpSuffix, []byte("half"))
	fs.setBytes(segName(999999, indexSuffix), []byte("orphan"))
	fs.setBytes(segName(l.Segments()[2].BaseOffset, indexSuffix), []byte("stale index of the tail"))
	l = mustOpen(t, fs, Options{SegmentBytes: 300})
	defer l.Close()
	for _, name := range fs.names() {
		if name == segName(0, indexSuffix)+tmpSuffix || name == segName(999999, indexSuffix) || name == segName(l.Segments()[2].BaseOffset, indexSuffix) {
			t.Fatalf("%s left behind", name)
		}
	}
	readAll(t, l, 0)
}

// TestStartOffsetSurvivesCrashMidDelete: deletion removes the oldest
// segment first, so a crash part way leaves a start offset that is one of
// the segment boundaries and a log that opens.
func TestStartOffsetSurvivesCrashMidDelete(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 300})
	for len(l.Segments()) < 5 {
		mustAppend(t, l, testBatch(2, 0, 40))
	}
	segs := l.Segments()
	l.Close()
	// As if the deletion of segments 0..2 crashed after removing 0 and
	// only the index files of 1.
	fs.Remove(segName(segs[0].BaseOffset, logSuffix))
	fs.Remove(segName(segs[0].BaseOffset, indexSuffix))
	fs.Remove(segName(segs[0].BaseOffset, timeIndexSuffix))
	fs.Remove(segName(segs[1].BaseOffset, indexSuffix))
	l = mustOpen(t, fs, Options{SegmentBytes: 300})
	defer l.Close()
	if l.StartOffset() != segs[1].BaseOffset {
		t.Fatalf("start %d, want %d", l.StartOffset(), segs[1].BaseOffset)
	}
	readAll(t, l, l.StartOffset())
}

func TestParseFsyncPolicy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FsyncPolicy
		ok   bool
	}{
		{"always", FsyncPolicy{Mode: FsyncAlways}, true},
		{"", FsyncPolicy{Mode: FsyncAlways}, true},
		{"never", FsyncPolicy{Mode: FsyncNever}, true},
		{"100ms", FsyncPolicy{Mode: FsyncInterval, Interval: 100 * time.Millisecond}, true},
		{"0s", FsyncPolicy{}, false},
		{"sometimes", FsyncPolicy{}, false},
	} {
		got, err := ParseFsyncPolicy(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: %v %v", c.in, got, err)
		}
		if c.ok && c.in != "" {
			if back, _ := ParseFsyncPolicy(got.String()); back != got {
				t.Errorf("%q does not round-trip: %v", c.in, got)
			}
		}
	}
}

// TestOSFS runs a short life cycle on the real file system.
func TestOSFS(t *testing.T) {
	dir := t.TempDir()
	var syncs, written int
	opts := Options{SegmentBytes: 2000, Hooks: Hooks{Fsync: func(time.Duration) { syncs++ }, Written: func(n int) { written += n }}}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		mustAppend(t, l, testBatch(2, int64(i), 30))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs == 0 || int64(written) < l.Size() {
		t.Fatalf("hooks: %d syncs, %d bytes written, size %d", syncs, written, l.Size())
	}
	l, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if recs := readAll(t, l, 0); len(recs) != 100 {
		t.Fatalf("%d records", len(recs))
	}
}

// TestSetSegmentLimitsAndRolledHook: limits changed at runtime apply from
// the next append, and each roll reports the closed segment.
func TestSetSegmentLimitsAndRolledHook(t *testing.T) {
	var rolled []SegmentInfo
	l := mustOpen(t, newFaultFS(), Options{SegmentBytes: 1 << 20, Hooks: Hooks{Rolled: func(s SegmentInfo) { rolled = append(rolled, s) }}})
	defer l.Close()
	for range 5 {
		mustAppend(t, l, testBatch(2, 0, 100))
	}
	if len(l.Segments()) != 1 || len(rolled) != 0 {
		t.Fatalf("rolled before the limit: %d segments", len(l.Segments()))
	}
	l.SetSegmentLimits(300, 0)
	for range 4 {
		mustAppend(t, l, testBatch(2, 0, 100))
	}
	segs := l.Segments()
	if len(segs) < 3 || len(rolled) != len(segs)-1 {
		t.Fatalf("%d segments, %d roll reports", len(segs), len(rolled))
	}
	if rolled[0].BaseOffset != 0 || rolled[0].NextOffset != segs[1].BaseOffset || rolled[0].Active {
		t.Fatalf("first roll report %+v, segments %+v", rolled[0], segs)
	}
}

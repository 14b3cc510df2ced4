package log

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// TestTornWriteEveryByte cuts the last batch of the tail segment at every
// byte: reopening keeps everything before it, cuts the torn batch, and
// appends continue at the right offset.
func TestTornWriteEveryByte(t *testing.T) {
	base := newFaultFS()
	l := mustOpen(t, base, Options{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testBatch(3, int64(100*i), 20))
	}
	last := l.Segments()[0].Size
	lastInfo := mustAppend(t, l, testBatch(4, 900, 30))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segName(0, logSuffix)
	full := base.bytes(seg)
	for cut := last; cut < int64(len(full)); cut++ {
		fs := base.clone()
		fs.setBytes(seg, full[:cut])
		l := mustOpen(t, fs, Options{})
		rep := l.Recovery()
		if rep.TruncatedBytes != cut-last || (cut > last && rep.TruncatedAt != last) {
			t.Fatalf("cut at %d: report %+v, want %d bytes cut at %d", cut, rep, cut-last, last)
		}
		if got := l.NextOffset(); got != lastInfo.BaseOffset {
			t.Fatalf("cut at %d: next offset %d, want %d", cut, got, lastInfo.BaseOffset)
		}
		if recs := readAll(t, l, 0); len(recs) != 15 {
			t.Fatalf("cut at %d: %d records survive, want 15", cut, len(recs))
		}
		if info := mustAppend(t, l, testBatch(2, 1000, 10)); info.BaseOffset != lastInfo.BaseOffset {
			t.Fatalf("cut at %d: append got %d, want %d", cut, info.BaseOffset, lastInfo.BaseOffset)
		}
		if recs := readAll(t, l, 0); len(recs) != 17 {
			t.Fatalf("cut at %d: %d records after append, want 17", cut, len(recs))
		}
		l.Close()
		// And once more from disk: the cut was durable.
		l = mustOpen(t, fs, Options{})
		if rep := l.Recovery(); rep.TruncatedBytes != 0 || l.NextOffset() != lastInfo.BaseOffset+2 {
			t.Fatalf("cut at %d: second open %+v next %d", cut, rep, l.NextOffset())
		}
		l.Close()
	}
}

// TestTornSegmentHeader: a crash while a segment was being created leaves a
// torn header; Open rewrites it and the log continues.
func TestTornSegmentHeader(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	mustAppend(t, l, testBatch(3, 0, 10))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	seg := segName(3, logSuffix)
	hdr := fs.bytes(seg)
	for cut := 0; cut < len(hdr); cut++ {
		c := fs.clone()
		c.setBytes(seg, hdr[:cut])
		l := mustOpen(t, c, Options{})
		if l.NextOffset() != 3 || l.LastIndex() != 1 {
			t.Fatalf("cut %d: next %d last index %d", cut, l.NextOffset(), l.LastIndex())
		}
		if info := mustAppend(t, l, testBatch(1, 5, 1)); info.BaseOffset != 3 {
			t.Fatalf("cut %d: append at %d", cut, info.BaseOffset)
		}
		if e, err := l.Entry(2); err != nil || e.Kind != KindBatch {
			t.Fatalf("cut %d: entry 2: %v", cut, err)
		}
		l.Close()
	}
}

// threeSegments writes three segments of batches of 2 records each.
func threeSegments(t *testing.T, fs *faultFS) (closed []SegmentInfo) {
	l := mustOpen(t, fs, Options{SegmentBytes: 1000, IndexIntervalBytes: 200})
	for i := 0; len(l.Segments()) < 3; i++ {
		mustAppend(t, l, testBatch(2, int64(10*i), 40))
	}
	mustAppend(t, l, testBatch(2, 100000, 40))
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return segs
}

// TestFlippedBitInClosedSegment: Open trusts the index footers and does not
// scan; reading the damaged batch is ErrCorrupt naming file and position;
// the other segments stay readable.
func TestFlippedBitInClosedSegment(t *testing.T) {
	fs := newFaultFS()
	segs := threeSegments(t, fs)
	name := segName(segs[1].BaseOffset, logSuffix)
	b := fs.bytes(name)
	pos := segmentHeaderSize + 200 // inside some batch after the first
	b[pos] ^= 0x10
	fs.setBytes(name, b)

	l := mustOpen(t, fs, Options{SegmentBytes: 1000, IndexIntervalBytes: 200})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedBytes != 0 || rep.RebuiltIndexes != 0 {
		t.Fatalf("recovery %+v", rep)
	}
	var corrupt error
	for off := segs[1].BaseOffset; off < segs[1].NextOffset; off += 2 {
		if _, err := l.Read(off, 1); err != nil {
			corrupt = err
			break
		}
	}
	wantErrIs(t, corrupt, ErrCorrupt)
	if !strings.Contains(corrupt.Error(), name) || !strings.Contains(corrupt.Error(), "position") {
		t.Fatalf("error %q does not say where", corrupt)
	}
	if recs := readRange(t, l, 0, segs[0].NextOffset); int64(len(recs)) != segs[0].NextOffset {
		t.Fatalf("segment 0: %d records", len(recs))
	}
	if recs := readAll(t, l, segs[2].BaseOffset); int64(len(recs)) != l.NextOffset()-segs[2].BaseOffset {
		t.Fatalf("segment 2: %d records", len(recs))
	}
}

// TestFlippedBitInTail: the tail scan verifies every CRC and cuts at the
// damaged batch.
func TestFlippedBitInTail(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	var infos []batch.Info
	for i := 0; i < 10; i++ {
		infos = append(infos, mustAppend(t, l, testBatch(2, int64(i), 30)))
	}
	l.Close()
	name := segName(0, logSuffix)
	b := fs.bytes(name)
	pos := segmentHeaderSize + 6*infos[0].Size() + 70
	b[pos] ^= 1
	fs.setBytes(name, b)
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedAt != int64(segmentHeaderSize+6*infos[0].Size()) {
		t.Fatalf("recovery %+v", rep)
	}
	if l.NextOffset() != 12 {
		t.Fatalf("next offset %d, want 12", l.NextOffset())
	}
}

// TestDamagedIndexes: missing, short, garbage index files and a flipped
// bit in index entries are all detected; lookups stay right.
func TestDamagedIndexes(t *testing.T) {
	opts := Options{SegmentBytes: 1000, IndexIntervalBytes: 200}
	cases := []struct {
		name    string
		damage  func(fs *faultFS, base int64)
		rebuilt int // at Open; lazily rebuilt ones are counted later
	}{
		{"missing index", func(fs *faultFS, base int64) { fs.Remove(segName(base, indexSuffix)) }, 1},
		{"missing timeindex", func(fs *faultFS, base int64) { fs.Remove(segName(base, timeIndexSuffix)) }, 1},
		{"short index", func(fs *faultFS, base int64) {
			b := fs.bytes(segName(base, indexSuffix))
			fs.setBytes(segName(base, indexSuffix), b[:len(b)/2])
		}, 1},
		{"empty index", func(fs *faultFS, base int64) { fs.setBytes(segName(base, indexSuffix), nil) }, 1},
		{"garbage index", func(fs *faultFS, base int64) {
			b := fs.bytes(segName(base, indexSuffix))
			fs.setBytes(segName(base, indexSuffix), bytes.Repeat([]byte{0xAB}, len(b)))
		}, 1},
		{"index entry bit flip", func(fs *faultFS, base int64) {
			b := fs.bytes(segName(base, indexSuffix))
			b[5] ^= 0x40 // an entry's relative offset; the footer is intact
			fs.setBytes(segName(base, indexSuffix), b)
		}, 0},
		{"stale index (segment grew)", func(fs *faultFS, base int64) {
			b := fs.bytes(segName(base, logSuffix))
			fs.setBytes(segName(base, logSuffix), append(b, make([]byte, 10)...))
		}, 1},
		{"footer field flipped", func(fs *faultFS, base int64) {
			x := fs.bytes(segName(base, timeIndexSuffix))
			x[len(x)-footerSize+40] ^= 1 // first index: caught by the footer CRC
			fs.setBytes(segName(base, timeIndexSuffix), x)
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFaultFS()
			segs := threeSegments(t, fs)
			ref := mustOpen(t, fs.clone(), opts)
			want := readAll(t, ref, 0)
			ref.Close()

			tc.damage(fs, segs[0].BaseOffset)
			l := mustOpen(t, fs, opts)
			defer l.Close()
			if rep := l.Recovery(); rep.RebuiltIndexes != tc.rebuilt {
				t.Fatalf("recovery %+v, want %d rebuilt", rep, tc.rebuilt)
			}
			for off := int64(0); off < l.HighWatermark(); off++ {
				b, err := l.Read(off, 1)
				if err != nil {
					t.Fatalf("read %d: %v", off, err)
				}
				info, _ := batch.ParseHeader(b)
				if off < info.BaseOffset || off > info.LastOffset() {
					t.Fatalf("read %d: batch %d..%d", off, info.BaseOffset, info.LastOffset())
				}
			}
			if got := readAll(t, l, 0); len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := uint64(1); i <= l.LastIndex(); i++ {
				e, err := l.Entry(i)
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				info, _ := batch.ParseHeader(e.Data)
				if info.BaseOffset != int64(2*(i-1)) {
					t.Fatalf("entry %d: base offset %d", i, info.BaseOffset)
				}
			}
			for _, r := range want {
				off, err := l.OffsetForTime(r.Timestamp)
				if err != nil || off != r.Offset {
					t.Fatalf("offset for time %d: %d %v, want %d", r.Timestamp, off, err, r.Offset)
				}
			}
		})
	}
}

// TestENOSPC: an append that runs out of space fails clearly, leaves the
// log readable, and appends work again once space returns.
func TestENOSPC(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testBatch(2, int64(i), 50))
	}
	fs.setSpace(70) // less than a batch
	_, err := l.Append(testBatch(2, 5, 50))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), segName(0, logSuffix)) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if _, err := l.Append(testBatch(2, 5, 50)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second append on a full disk: %v", err)
	}
	if recs := readAll(t, l, 0); len(recs) != 10 {
		t.Fatalf("%d records readable, want 10", len(recs))
	}
	fs.setSpace(-1)
	if info := mustAppend(t, l, testBatch(2, 5, 50)); info.BaseOffset != 10 {
		t.Fatalf("append after space returned at %d, want 10", info.BaseOffset)
	}
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedBytes != 0 {
		t.Fatalf("partial write left behind: %+v", rep)
	}
	if recs := readAll(t, l, 0); len(recs) != 12 {
		t.Fatalf("%d records after reopen, want 12", len(recs))
	}
}

// TestENOSPCAtRoll: no space for the new segment: the append fails, the log
// keeps working in the old segment once space returns.
func TestENOSPCAtRoll(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 300})
	for len(l.Segments()) < 2 {
		mustAppend(t, l, testBatch(2, 0, 50))
	}
	next := l.NextOffset()
	for l.Segments()[1].Size < 300 {
		mustAppend(t, l, testBatch(2, 0, 50))
		next += 2
	}
	fs.setSpace(10)
	if _, err := l.Append(testBatch(2, 0, 50)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("roll on a full disk: %v", err)
	}
	fs.setSpace(-1)
	if info := mustAppend(t, l, testBatch(2, 0, 50)); info.BaseOffset != next {
		t.Fatalf("append at %d, want %d", info.BaseOffset, next)
	}
	l.Close()
	l = mustOpen(t, fs, Options{SegmentBytes: 300})
	defer l.Close()
	if recs := readAll(t, l, 0); int64(len(recs)) != next+2 {
		t.Fatalf("%d records, want %d", len(recs), next+2)
	}
}

// TestTornWriteError: a write that fails half way (EIO) is cut back; the
// next append lands right after the last good entry.
func TestTornWriteError(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	mustAppend(t, l, testBatch(2, 0, 50))
	fs.tearNextWrite(33)
	if _, err := l.Append(testBatch(2, 0, 50)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("torn write: %v", err)
	}
	if info := mustAppend(t, l, testBatch(2, 0, 50)); info.BaseOffset != 2 {
		t.Fatalf("append at %d, want 2", info.BaseOffset)
	}
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedBytes != 0 || l.NextOffset() != 4 {
		t.Fatalf("recovery %+v next %d", rep, l.NextOffset())
	}
}

// TestCrashBeforeFsync: what was fsynced survives a crash, what was only
// written may not.
func TestCrashBeforeFsync(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{Fsync: FsyncPolicy{Mode: FsyncNever}})
	for i := 0; i < 3; i++ {
		mustAppend(t, l, testBatch(2, 0, 10))
	}
	if err := l.Roll(); err != nil { // fsyncs the first segment
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, testBatch(2, 0, 10))
	}
	crashed := fs.crash()
	l.Close()
	l = mustOpen(t, crashed, Options{})
	defer l.Close()
	if l.NextOffset() != 6 {
		t.Fatalf("after the crash: next offset %d, want 6 (synced at roll)", l.NextOffset())
	}
	if recs := readAll(t, l, 0); len(recs) != 6 {
		t.Fatalf("%d records", len(recs))
	}
}

// TestCrashLosesNoAcknowledgedAppend: concurrent FsyncAlways appenders;
// a crash at an arbitrary moment keeps every append that returned.
func TestCrashLosesNoAcknowledgedAppend(t *testing.T) {
	for round := 0; round < 5; round++ {
		fs := newFaultFS()
		l := mustOpen(t, fs, Options{SegmentBytes: 2000})
		var mu sync.Mutex
		acked := map[int64]bool{}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					info, err := l.Append(testBatch(1, 0, 20))
					if err != nil {
						return
					}
					mu.Lock()
					acked[info.BaseOffset] = true
					mu.Unlock()
				}
			}()
		}
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n >= 50*(round+1) {
				break
			}
		}
		mu.Lock()
		before := make([]int64, 0, len(acked))
		for off := range acked {
			before = append(before, off)
		}
		crashed := fs.crash()
		mu.Unlock()
		close(stop)
		wg.Wait()
		l.Close()

		l = mustOpen(t, crashed, Options{SegmentBytes: 2000})
		for _, off := range before {
			if off >= l.NextOffset() {
				t.Fatalf("round %d: acknowledged offset %d lost (next offset %d)", round, off, l.NextOffset())
			}
		}
		readAll(t, l, 0)
		l.Close()
	}
}

// TestFsyncFailure: a failed fsync fails the waiting append and every later
// one (the page cache is in doubt) until the log is reopened.
func TestFsyncFailure(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	mustAppend(t, l, testBatch(1, 0, 10))
	fs.setSync(syscall.EIO, 0)
	if _, err := l.Append(testBatch(1, 0, 10)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v", err)
	}
	fs.setSync(nil, 0)
	if _, err := l.Append(testBatch(1, 0, 10)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after a failed fsync: %v", err)
	}
	if recs := readAll(t, l, 0); len(recs) != 1 {
		t.Fatalf("%d records readable, want 1", len(recs))
	}
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	mustAppend(t, l, testBatch(1, 0, 10))
}

// TestIndexWriteFailsAtRoll: no space for the index files of a rolled
// segment: the segment keeps its index in memory, reads stay right, and
// the next Open rebuilds the files.
func TestIndexWriteFailsAtRoll(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 400, IndexIntervalBytes: 100}
	l := mustOpen(t, fs, opts)
	for l.Segments()[0].Size < 400 {
		mustAppend(t, l, testBatch(2, 0, 40))
	}
	next := l.NextOffset()
	fs.setSpace(segmentHeaderSize) // the new segment's header, then nothing
	if _, err := l.Append(testBatch(2, 0, 40)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	fs.setSpace(-1)
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("%d segments, want the roll done", n)
	}
	if _, err := fs.Stat(segName(0, indexSuffix)); err == nil {
		t.Fatal("index file written despite ENOSPC")
	}
	mustAppend(t, l, testBatch(2, 0, 40))
	for off := int64(0); off < l.HighWatermark(); off++ {
		if _, err := l.Read(off, 1); err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
	}
	l.Close()
	l = mustOpen(t, fs, opts)
	defer l.Close()
	if rep := l.Recovery(); rep.RebuiltIndexes != 1 {
		t.Fatalf("recovery %+v, want the index rebuilt", rep)
	}
	if recs := readAll(t, l, 0); int64(len(recs)) != next+2 {
		t.Fatalf("%d records, want %d", len(recs), next+2)
	}
}

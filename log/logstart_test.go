package log

import (
	"testing"
)

// TestAdvanceStart: the start moves inside a segment, reads below it are
// out of range, it never moves back or past the high watermark, and it
// survives a reopen; retention then deletes the segments wholly below it.
func TestAdvanceStart(t *testing.T) {
	ffs := newFaultFS()
	opts := Options{SegmentBytes: 400, IndexIntervalBytes: 64}
	l := mustOpen(t, ffs, opts)
	for i := range 20 {
		mustAppend(t, l, testBatch(2, int64(100*i), 40))
	}
	hw := l.HighWatermark()
	if len(l.Segments()) < 3 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	target := l.Segments()[1].BaseOffset + 1 // inside the second segment
	if got, err := l.AdvanceStart(target); err != nil || got != target {
		t.Fatalf("advance start to %d: %d, %v", target, got, err)
	}
	if _, err := l.Read(target-1, 1000); !isOutOfRange(err, target) {
		t.Fatalf("read below the start: %v", err)
	}
	if recs := readAll(t, l, target-1+1); len(recs) == 0 {
		t.Fatal("nothing read at the start")
	}
	if got, err := l.AdvanceStart(target - 1); err != nil || got != target {
		t.Fatalf("advance start back: %d, %v", got, err)
	}
	if _, err := l.AdvanceStart(hw + 1); !isOutOfRange(err, target) {
		t.Fatalf("advance start past the high watermark: %v", err)
	}
	if off, err := l.OffsetForTime(0); err != nil || off != target {
		t.Fatalf("offset for time 0: %d, %v; want the start %d", off, err, target)
	}
	l.Close()

	l = mustOpen(t, ffs.crash(), opts)
	defer l.Close()
	if got := l.StartOffset(); got != target {
		t.Fatalf("start after reopen: %d, want %d", got, target)
	}
	deleted, err := l.DeleteSegmentsBefore(l.StartOffset())
	if err != nil || len(deleted) != 1 {
		t.Fatalf("retention below the start deleted %d segments, %v; want the first one", len(deleted), err)
	}
	if got, base := l.StartOffset(), l.BaseOffset(); got != target || base != deleted[0].NextOffset {
		t.Fatalf("after retention: start %d, base %d; want %d, %d", got, base, target, deleted[0].NextOffset)
	}
	if got, err := l.AdvanceStart(hw); err != nil || got != hw {
		t.Fatalf("advance start to the high watermark: %d, %v", got, err)
	}
	if b, err := l.Read(hw, 1000); err != nil || len(b) != 0 {
		t.Fatalf("read at the high watermark: %d bytes, %v", len(b), err)
	}
}

func isOutOfRange(err error, start int64) bool {
	oe, ok := err.(*OutOfRangeError)
	return ok && oe.StartOffset == start
}

// TestAdvanceStartCrashAtEveryStep: a crash at any step of AdvanceStart
// leaves the old start or the new one, and the new one once it returned.
func TestAdvanceStartCrashAtEveryStep(t *testing.T) {
	opts := Options{SegmentBytes: 400, IndexIntervalBytes: 64}
	base := newFaultFS()
	l := mustOpen(t, base, opts)
	for i := range 10 {
		mustAppend(t, l, testBatch(2, int64(100*i), 40))
	}
	l.Close()
	for _, from := range []int64{0, 3} {
		ffs := base.clone()
		if from > 0 {
			l := mustOpen(t, ffs, opts)
			if _, err := l.AdvanceStart(from); err != nil {
				t.Fatal(err)
			}
			l.Close()
		}
		const to = 7
		for k := 0; ; k++ {
			run := ffs.clone()
			var crashed *faultFS
			n := 0
			run.before = func(string, string) {
				if n == k {
					crashed = run.crash()
				}
				n++
			}
			l := mustOpen(t, run, opts)
			n, crashed = 0, nil // opening is not under test
			_, err := l.AdvanceStart(to)
			l.Close()
			done := crashed == nil
			if done {
				crashed = run.crash()
			}
			if err != nil {
				t.Fatalf("from %d: advance start: %v", from, err)
			}
			l = mustOpen(t, crashed, opts)
			got := l.StartOffset()
			l.Close()
			if got != from && got != to || done && got != to {
				t.Fatalf("from %d: crash before step %d (finished %v): start %d", from, k, done, got)
			}
			for _, name := range crashed.names() {
				if name == testDir+"/"+logStartFile+tmpSuffix {
					t.Fatalf("from %d: crash before step %d: %s left", from, k, name)
				}
			}
			if done {
				break
			}
		}
	}
}

// TestLogStartFileCorrupt: a log start file that does not check out makes
// Open fail rather than serve records the user deleted.
func TestLogStartFileCorrupt(t *testing.T) {
	ffs := newFaultFS()
	l := mustOpen(t, ffs, Options{})
	mustAppend(t, l, testBatch(5, 0, 10))
	if _, err := l.AdvanceStart(2); err != nil {
		t.Fatal(err)
	}
	l.Close()
	name := testDir + "/" + logStartFile
	b := ffs.bytes(name)
	b[10] ^= 1
	ffs.setBytes(name, b)
	if _, err := Open(testDir, Options{FS: ffs}); err == nil {
		t.Fatal("open with a corrupt log start file succeeded")
	} else {
		wantErrIs(t, err, ErrCorrupt)
	}
}

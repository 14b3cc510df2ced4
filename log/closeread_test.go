package log

import (
	"errors"
	"testing"
)

// A read that found its segment before Close finishes on that segment's
// file; the file is closed when the read releases it. Close used to close
// every file at once, and such a read failed with the file's "file already
// closed" (CI's topic-churn test saw a subscriber get it as an Internal
// error while its topic was deleted).
func TestReadUnderWayFinishesAcrossClose(t *testing.T) {
	l := mustOpen(t, newFaultFS(), Options{})
	want := mustAppend(t, l, testBatch(3, 1000, 10))
	loc, err := l.locate(func() (*segment, seek, error) {
		s := l.segmentForOffset(0)
		return s, seek{by: byOffset, key: 0}, nil
	})
	if err != nil || loc.s == nil {
		t.Fatalf("locate offset 0: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := readBatches(loc.s, loc.h.f, nil, loc.pos, loc.end, 0, want.NextOffset(), 1<<20)
	if err != nil {
		t.Fatalf("a read under way across Close: %v", err)
	}
	if len(data) == 0 {
		t.Fatal("a read under way across Close read nothing")
	}
	l.release(loc.s)
	if loc.s.h != nil {
		t.Fatal("the segment's file is still open after its last reader released it, the log closed")
	}
	if _, err := l.Read(0, 1<<20); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v, want ErrClosed", err)
	}
}

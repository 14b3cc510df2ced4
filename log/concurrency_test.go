package log

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// TestGroupCommit: concurrent FsyncAlways appenders share fsyncs and get
// contiguous, non-overlapping offsets; each reads back as written.
func TestGroupCommit(t *testing.T) {
	fs := newFaultFS()
	fs.setSync(nil, 2*time.Millisecond)
	l := mustOpen(t, fs, Options{SegmentBytes: 20 << 10})
	defer l.Close()
	const writers, each = 16, 40
	type got struct {
		info batch.Info
		val  string
	}
	results := make(chan got, writers*each)
	syncsBefore := fs.syncs.Load()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				val := fmt.Sprintf("w%d-%d", w, i)
				b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Value: []byte(val)}, {Value: []byte(val)}})
				info, err := l.Append(b)
				if err != nil {
					t.Error(err)
					return
				}
				results <- got{info, val}
			}
		}()
	}
	wg.Wait()
	close(results)
	var all []got
	for r := range results {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].info.BaseOffset < all[j].info.BaseOffset })
	for i, r := range all {
		if r.info.BaseOffset != int64(2*i) {
			t.Fatalf("batch %d at offset %d: offsets not contiguous", i, r.info.BaseOffset)
		}
		b, err := l.Read(r.info.BaseOffset, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := batch.Decode(b, 0)
		if err != nil || string(recs[0].Value) != r.val {
			t.Fatalf("offset %d: %v %q, want %q", r.info.BaseOffset, err, recs[0].Value, r.val)
		}
	}
	syncs := fs.syncs.Load() - syncsBefore
	t.Logf("%d appends, %d fsyncs (rolls included)", len(all), syncs)
	if syncs >= int64(len(all)) {
		t.Fatalf("%d fsyncs for %d appends: no group commit", syncs, len(all))
	}
}

// TestTailingReaders: readers tail with Wait while a writer appends and
// retention deletes the head; they see records in order, jump forward
// only when told the offset is gone, and stop at Close. No goroutine is
// left behind.
func TestTailingReaders(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 1500})
	const total = 400
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var off int64
			for {
				err := l.Wait(context.Background(), off)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				b, err := l.Read(off, 500)
				var oor *OutOfRangeError
				if errors.As(err, &oor) {
					if oor.StartOffset <= off {
						t.Errorf("out of range at %d but start is %d", off, oor.StartOffset)
						return
					}
					off = oor.StartOffset
					continue
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				err = batch.Split(b, func(raw []byte, info batch.Info) error {
					if info.BaseOffset > off || info.NextOffset() <= off {
						return fmt.Errorf("batch %d..%d read at %d", info.BaseOffset, info.LastOffset(), off)
					}
					off = info.NextOffset()
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < total; i++ {
			if _, err := l.Append(testBatch(3, int64(i), 30)); err != nil {
				t.Error(err)
				return
			}
			if i%25 == 0 {
				if _, err := l.DeleteSegmentsBefore(l.HighWatermark() - 100); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	// Let the writer finish, then close under the readers.
	for l.NextOffset() < 3*total {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left, %d before:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if n := fs.openFiles.Load(); n != 0 {
		t.Fatalf("%d files left open after Close", n)
	}
}

// TestReaderKeepsDeletedSegment: a reader holding a segment that retention
// deletes keeps reading its open file; the file closes when released.
func TestReaderKeepsDeletedSegment(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 500})
	defer l.Close()
	for len(l.Segments()) < 3 {
		mustAppend(t, l, testBatch(2, 0, 40))
	}
	l.mu.Lock()
	s := l.segs[0]
	h, err := l.acquireLocked(s)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	open := fs.openFiles.Load()
	if del, err := l.DeleteSegmentsBefore(l.Segments()[1].BaseOffset); err != nil || len(del) != 1 {
		t.Fatalf("delete: %v %v", del, err)
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of a deleted segment: %v", err)
	}
	sc := newScanner(h.f, segmentHeaderSize, s.size, 0)
	if _, _, e, err := sc.next(); err != nil || e.baseOffset != 0 {
		t.Fatalf("reading the held segment: %v", err)
	}
	l.release(s)
	if fs.openFiles.Load() >= open {
		t.Fatalf("deleted segment's file still open after release")
	}
	for _, name := range fs.names() {
		if strings.Contains(name, fmt.Sprintf("%020d", 0)) {
			t.Fatalf("%s left behind", name)
		}
	}
}

// TestOpenFileHandlesBounded: reading every segment keeps at most
// maxOpenSegments closed segments open.
func TestOpenFileHandlesBounded(t *testing.T) {
	saved := maxOpenSegments
	maxOpenSegments = 4
	defer func() { maxOpenSegments = saved }()
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 300})
	defer l.Close()
	for len(l.Segments()) < 20 {
		mustAppend(t, l, testBatch(2, 0, 40))
	}
	l.Close()
	l = mustOpen(t, fs, Options{SegmentBytes: 300})
	readAll(t, l, 0)
	// Each closed segment: the segment and two index files.
	if n := fs.openFiles.Load(); n > int64(3*maxOpenSegments+1) {
		t.Fatalf("%d files open", n)
	}
}

func TestFsyncModes(t *testing.T) {
	t.Run("never", func(t *testing.T) {
		fs := newFaultFS()
		l := mustOpen(t, fs, Options{Fsync: FsyncPolicy{Mode: FsyncNever}})
		defer l.Close()
		before := fs.syncs.Load()
		mustAppend(t, l, testBatch(2, 0, 10))
		if l.HighWatermark() != 2 || fs.syncs.Load() != before {
			t.Fatalf("hw %d, %d syncs", l.HighWatermark(), fs.syncs.Load()-before)
		}
	})
	t.Run("interval", func(t *testing.T) {
		fs := newFaultFS()
		l := mustOpen(t, fs, Options{Fsync: FsyncPolicy{Mode: FsyncInterval, Interval: time.Millisecond}})
		defer l.Close()
		before := fs.syncs.Load()
		mustAppend(t, l, testBatch(2, 0, 10))
		if l.HighWatermark() != 2 {
			t.Fatalf("hw %d", l.HighWatermark())
		}
		deadline := time.Now().Add(5 * time.Second)
		for fs.syncs.Load() == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if fs.syncs.Load() == before {
			t.Fatal("no background fsync")
		}
	})
}

func TestManualHighWatermark(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{ManualHighWatermark: true})
	defer l.Close()
	mustAppend(t, l, testBatch(2, 0, 10))
	mustAppend(t, l, testBatch(2, 0, 10))
	if l.HighWatermark() != 0 {
		t.Fatalf("hw moved by itself: %d", l.HighWatermark())
	}
	ch := l.Changed()
	l.SetHighWatermark(2)
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed at a high watermark move")
	}
	if b, _ := l.Read(0, 1000); len(b) == 0 {
		t.Fatal("nothing readable below the high watermark")
	}
	if _, err := l.Read(3, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read above the high watermark: %v", err)
	}
	l.SetHighWatermark(100)
	if l.HighWatermark() != 4 {
		t.Fatalf("hw %d, want clamped to 4", l.HighWatermark())
	}
	if err := l.TruncateFrom(2); err != nil {
		t.Fatal(err)
	}
	if l.HighWatermark() != 2 {
		t.Fatalf("hw %d after truncation, want 2", l.HighWatermark())
	}
}

func TestWait(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on an empty log: %v", err)
	}
	done := make(chan error)
	go func() { done <- l.Wait(context.Background(), 1) }()
	mustAppend(t, l, testBatch(1, 0, 1))
	mustAppend(t, l, testBatch(1, 0, 1))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- l.Wait(context.Background(), 10) }()
	l.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("wait at close: %v", err)
	}
	if _, err := l.Append(testBatch(1, 0, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	select {
	case <-l.Changed():
	default:
		t.Fatal("Changed not closed after Close")
	}
}

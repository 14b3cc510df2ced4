package log

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncGate holds the segment fsyncs of a faultFS: each one announces
// itself on entered, then waits for a release. Close lets every later one
// through.
type syncGate struct {
	entered chan string
	release chan struct{}
	once    sync.Once
	open    chan struct{}
}

func gateSyncs(fs *faultFS) *syncGate {
	g := &syncGate{entered: make(chan string, 100), release: make(chan struct{}), open: make(chan struct{})}
	fs.mu.Lock()
	fs.before = func(op, name string) {
		if op != "sync" {
			return
		}
		select {
		case <-g.open:
			return
		default:
		}
		g.entered <- name
		select {
		case <-g.release:
		case <-g.open:
		}
	}
	fs.mu.Unlock()
	return g
}

// next waits for the next fsync to start.
func (g *syncGate) next(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no fsync started")
	}
}

func (g *syncGate) letOne() { g.release <- struct{}{} }
func (g *syncGate) letAll() { g.once.Do(func() { close(g.open) }) }
func mustStart(t *testing.T, l *Log, b []byte) func() error {
	t.Helper()
	_, wait, err := appendStart(l, b)
	if err != nil {
		t.Fatalf("append start: %v", err)
	}
	return wait
}

// waitReturns runs wait in a goroutine and returns its outcome channel.
func waitReturns(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

func notYet(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v) before its fsync", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestAppendStartPipelines: with FsyncAlways, AppendStart writes and
// returns while an earlier batch's fsync runs; nothing is durable (wait
// returns) or readable (the high watermark) before the fsync that covers
// it, and one fsync covers every batch written before it started.
func TestAppendStartPipelines(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	defer l.Close()
	g := gateSyncs(fs)
	defer g.letAll()

	info1, wait1, err := appendStart(l, testBatch(2, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	g.next(t) // the syncer runs the first fsync without anyone waiting
	done1 := waitReturns(wait1)
	info2, wait2, err := appendStart(l, testBatch(3, 0, 10)) // during that fsync
	if err != nil {
		t.Fatal(err)
	}
	info3, wait3, err := appendStart(l, testBatch(1, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	if info1.BaseOffset != 0 || info2.BaseOffset != 2 || info3.BaseOffset != 5 {
		t.Fatalf("offsets %d %d %d, want 0 2 5", info1.BaseOffset, info2.BaseOffset, info3.BaseOffset)
	}
	notYet(t, done1, "wait of batch 1")
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any fsync, want 0", hw)
	}
	if b, err := l.Read(0, 1<<20); err != nil || len(b) != 0 {
		t.Fatalf("read before any fsync: %d bytes, %v", len(b), err)
	}

	g.letOne()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after the first fsync, want 2 (batches 2 and 3 were written during it)", hw)
	}
	done3 := waitReturns(wait3)
	g.next(t) // one fsync for batches 2 and 3
	notYet(t, done3, "wait of batch 3")
	g.letOne()
	if err := <-done3; err != nil {
		t.Fatal(err)
	}
	if err := wait2(); err != nil { // late, after its fsync
		t.Fatal(err)
	}
	if err := wait2(); err != nil { // and again
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 6 {
		t.Fatalf("high watermark %d, want 6", hw)
	}
	if recs := readAll(t, l, 0); len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
}

// TestAppendStartFsyncFailure: a failed fsync fails the wait of every batch
// it was to cover, written before or during it, and refuses later appends;
// none of them becomes readable.
func TestAppendStartFsyncFailure(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	defer l.Close()
	mustAppend(t, l, testBatch(1, 0, 10))
	g := gateSyncs(fs)
	defer g.letAll()
	wait1 := mustStart(t, l, testBatch(1, 0, 10))
	g.next(t)
	wait2 := mustStart(t, l, testBatch(1, 0, 10))
	fs.setSync(syscall.EIO, 0)
	g.letAll()
	if err := wait1(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("wait of the batch the failed fsync covered: %v", err)
	}
	if err := wait2(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("wait of the batch written during the failed fsync: %v", err)
	}
	if _, _, err := appendStart(l, testBatch(1, 0, 10)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append start after a failed fsync: %v", err)
	}
	if hw := l.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1 (only the synced batch)", hw)
	}
}

// TestAppendStartTruncated: a truncation that may have cut a started batch
// before it was durable fails its wait, even once synced afterwards.
func TestAppendStartTruncated(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	defer l.Close()
	mustAppend(t, l, testBatch(1, 0, 10))
	g := gateSyncs(fs)
	defer g.letAll()
	wait := mustStart(t, l, testBatch(2, 0, 10))
	g.next(t)
	done := waitReturns(wait)
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateFrom(1) }()
	// The truncation runs during the fsync (it may fsync itself).
	var err error
	select {
	case err = <-truncated:
	case <-g.entered:
		g.letAll() // the syncer's fsync ends after the truncation: it holds the lock
		err = <-truncated
	}
	if err != nil {
		t.Fatal(err)
	}
	g.letAll()
	if err := <-done; !errors.Is(err, errTruncated) {
		t.Fatalf("wait of a truncated batch: %v", err)
	}
	if err := wait(); !errors.Is(err, errTruncated) {
		t.Fatalf("late wait of a truncated batch: %v", err)
	}
	if l.NextOffset() != 1 || l.HighWatermark() != 1 {
		t.Fatalf("next offset %d, high watermark %d, want 1 and 1", l.NextOffset(), l.HighWatermark())
	}
}

// TestAppendStartClose: Close syncs the batches started before it; their
// waits, before or after Close, return nil, and they survive a reopen.
func TestAppendStartClose(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	g := gateSyncs(fs)
	wait1 := mustStart(t, l, testBatch(1, 0, 10))
	g.next(t)
	wait2 := mustStart(t, l, testBatch(1, 0, 10))
	done1 := waitReturns(wait1)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	g.letAll()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if err := wait2(); err != nil {
		t.Fatalf("wait after close of a batch close synced: %v", err)
	}
	if _, _, err := appendStart(l, testBatch(1, 0, 10)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append start after close: %v", err)
	}
	l = mustOpen(t, fs.crash(), Options{})
	defer l.Close()
	if l.NextOffset() != 2 {
		t.Fatalf("next offset %d after reopen, want 2", l.NextOffset())
	}
}

// TestAppendStartPolicies: with FsyncNever and FsyncInterval a started
// batch is readable at once and its wait returns without an fsync.
func TestAppendStartPolicies(t *testing.T) {
	for _, p := range []FsyncPolicy{{Mode: FsyncNever}, {Mode: FsyncInterval, Interval: time.Hour}} {
		fs := newFaultFS()
		l := mustOpen(t, fs, Options{Fsync: p})
		before := fs.syncs.Load()
		wait := mustStart(t, l, testBatch(2, 0, 10))
		if hw := l.HighWatermark(); hw != 2 {
			t.Fatalf("mode %v: high watermark %d after start, want 2", p.Mode, hw)
		}
		if err := wait(); err != nil {
			t.Fatalf("mode %v: %v", p.Mode, err)
		}
		if n := fs.syncs.Load() - before; n != 0 {
			t.Fatalf("mode %v: %d fsyncs", p.Mode, n)
		}
		l.Close()
	}
}

// TestCrashLosesNoAcknowledgedPipelinedAppend: an appender keeps up to 4
// batches started and acknowledges each once its wait returned, in order;
// a crash at an arbitrary moment keeps every acknowledged batch.
func TestCrashLosesNoAcknowledgedPipelinedAppend(t *testing.T) {
	for round := 0; round < 5; round++ {
		fs := newFaultFS()
		fs.setSync(nil, 100*time.Microsecond)
		opts := Options{SegmentBytes: 3000}
		l := mustOpen(t, fs, opts)
		var mu sync.Mutex
		var acked []int64
		stop := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			type started struct {
				off  int64
				wait func() error
			}
			var window []started
			for {
				select {
				case <-stop:
					return
				default:
				}
				if len(window) == 4 {
					if err := window[0].wait(); err != nil {
						return
					}
					mu.Lock()
					acked = append(acked, window[0].off)
					mu.Unlock()
					window = window[1:]
				}
				info, wait, err := appendStart(l, testBatch(1, 0, 20))
				if err != nil {
					return
				}
				window = append(window, started{info.BaseOffset, wait})
			}
		}()
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n >= 30*(round+1) {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		mu.Lock()
		before := append([]int64(nil), acked...)
		crashed := fs.crash()
		mu.Unlock()
		close(stop)
		<-finished
		l.Close()

		l = mustOpen(t, crashed, opts)
		for _, off := range before {
			if off >= l.NextOffset() {
				t.Fatalf("round %d: acknowledged offset %d lost (next offset %d)", round, off, l.NextOffset())
			}
		}
		readAll(t, l, 0)
		l.Close()
	}
}

package retention

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/log"
)

// logBuffer is a slog destination safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(buf *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// counters reads the trimmer's counters as "name{topic}" -> value.
func counters(t *testing.T, tr *Trimmer) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tr)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			topic := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" {
					topic = l.GetValue()
				}
			}
			out[fmt.Sprintf("%s{%s}", mf.GetName(), topic)] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestTrimmerDeletesCountsAndLogs(t *testing.T) {
	clock := &fakeClock{t: t0}
	l := newFakeLog(clock.Now, 10)
	l.Append(45, t0.UnixMilli()) // 4 closed segments of 10, 5 records active
	var logs logBuffer
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			return []Target{{Topic: "orders", Partition: 2, Policy: Policy{RetentionRecords: 12}, Log: l}}, nil
		},
		Now:    clock.Now,
		Logger: testLogger(&logs),
	})
	res, err := tr.TrimNow()
	if err != nil {
		t.Fatal(err)
	}
	// Keep the last 12 of 45: offsets 33.. stay, so [0, 30) goes.
	if want := (Result{Segments: 3, Bytes: 300, Records: 30}); res != want {
		t.Fatalf("TrimNow = %+v, want %+v", res, want)
	}
	if start, _ := l.Bounds(); start != 30 {
		t.Fatalf("log start = %d, want 30", start)
	}
	if _, err := l.Read(29); !errors.Is(err, log.ErrOffsetOutOfRange) {
		t.Fatalf("read of a trimmed offset: %v, want out of range", err)
	}
	want := map[string]float64{
		"logd_retention_deleted_segments_total{orders}": 3,
		"logd_retention_deleted_bytes_total{orders}":    300,
		"logd_retention_deleted_records_total{orders}":  30,
	}
	if got := counters(t, tr); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("metrics = %v, want %v", got, want)
	}
	line := logs.String()
	for _, s := range []string{"retention: deleted segments", "topic=orders", "partition=2", "reason=records", "segments=3", "log_start=30"} {
		if !strings.Contains(line, s) {
			t.Fatalf("log %q lacks %q", line, s)
		}
	}
	// Nothing more to do: a second trim deletes nothing and calls no delete.
	deletes := l.deletes
	if res, err := tr.TrimNow(); err != nil || res != (Result{}) || l.deletes != deletes {
		t.Fatalf("second trim = %+v, %v, %d deletes", res, err, l.deletes-deletes)
	}
}

// Retention time follows the injected clock.
func TestTrimmerTimeWithFakeClock(t *testing.T) {
	clock := &fakeClock{t: t0}
	l := newFakeLog(clock.Now, 10)
	for range 3 { // segments written an hour apart
		l.Append(10, clock.Now().UnixMilli())
		clock.Advance(time.Hour)
	}
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			return []Target{{Topic: "t", Policy: Policy{RetentionTime: 90 * time.Minute}, Log: l}}, nil
		},
		Now:    clock.Now,
		Logger: testLogger(&logBuffer{}),
	})
	// Now t0+3h: newest records at t0, t0+1h, t0+2h. Older than 1h30m: the
	// first two.
	if res, _ := tr.TrimNow(); res.Segments != 2 {
		t.Fatalf("at t0+3h deleted %d segments, want 2", res.Segments)
	}
	clock.Advance(time.Hour)
	if res, _ := tr.TrimNow(); res.Segments != 1 {
		t.Fatalf("at t0+4h deleted %d segments, want 1", res.Segments)
	}
	clock.Advance(100 * day)
	if res, _ := tr.TrimNow(); res.Segments != 0 {
		t.Fatalf("the active segment was deleted")
	}
	if start, end := l.Bounds(); start != 30 || end != 30 {
		t.Fatalf("bounds = [%d, %d), want [30, 30)", start, end)
	}
}

// `logd topic alter` changes the policy the targets function returns; the
// next trim applies it.
func TestTrimmerPolicyChangeAppliesAtNextTrim(t *testing.T) {
	clock := &fakeClock{t: t0}
	l := newFakeLog(clock.Now, 10)
	l.Append(50, t0.UnixMilli())
	var mu sync.Mutex
	policy := DefaultPolicy()
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			mu.Lock()
			defer mu.Unlock()
			return []Target{{Topic: "t", Policy: policy, Log: l}}, nil
		},
		Now:    clock.Now,
		Logger: testLogger(&logBuffer{}),
	})
	steps := []struct {
		policy Policy
		start  int64
	}{
		{DefaultPolicy(), 0},
		{Policy{RetentionTime: DefaultRetentionTime, RetentionBytes: 300}, 20},
		{Policy{RetentionTime: DefaultRetentionTime, RetentionBytes: 300, RetentionRecords: 10}, 40},
		{DefaultPolicy(), 40}, // loosening keeps what is gone, gone
	}
	for i, s := range steps {
		mu.Lock()
		policy = s.policy
		mu.Unlock()
		if _, err := tr.TrimNow(); err != nil {
			t.Fatal(err)
		}
		if start, _ := l.Bounds(); start != s.start {
			t.Fatalf("step %d (%+v): log start %d, want %d", i, s.policy, start, s.start)
		}
	}
}

// A partition that fails does not stop the others; the failure is logged and
// returned.
func TestTrimmerPartitionFailure(t *testing.T) {
	clock := &fakeClock{t: t0}
	bad, good := newFakeLog(clock.Now, 10), newFakeLog(clock.Now, 10)
	bad.Append(35, 0)
	good.Append(35, 0)
	bad.deleteErr = log.ErrClosed
	var logs logBuffer
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			p := Policy{RetentionRecords: 1}
			return []Target{{Topic: "a", Partition: 0, Policy: p, Log: bad}, {Topic: "a", Partition: 1, Policy: p, Log: good}}, nil
		},
		Now:    clock.Now,
		Logger: testLogger(&logs),
	})
	res, err := tr.TrimNow()
	if !errors.Is(err, log.ErrClosed) || !strings.Contains(err.Error(), "a/0") {
		t.Fatalf("err = %v, want log.ErrClosed naming a/0", err)
	}
	if res.Segments != 3 {
		t.Fatalf("good partition: %d segments deleted, want 3", res.Segments)
	}
	if !strings.Contains(logs.String(), "retention: trim failed") {
		t.Fatalf("failure not logged: %s", logs.String())
	}
}

func TestTrimmerTargetsError(t *testing.T) {
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) { return nil, errors.New("pebble: closed") },
		Logger:  testLogger(&logBuffer{}),
	})
	if _, err := tr.TrimNow(); err == nil || !strings.Contains(err.Error(), "pebble: closed") {
		t.Fatalf("err = %v", err)
	}
}

// countingTargets returns no targets and reports each call.
func countingTargets() (func() ([]Target, error), *atomic.Int64, chan struct{}) {
	var n atomic.Int64
	ch := make(chan struct{}, 100)
	return func() ([]Target, error) {
		n.Add(1)
		select {
		case ch <- struct{}{}:
		default:
		}
		return nil, nil
	}, &n, ch
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func runTrimmer(t *testing.T, tr *Trimmer) (cancel func()) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancelCtx()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestTrimmerRunTrimsAtStartAndOnKick(t *testing.T) {
	targets, n, trimmed := countingTargets()
	tr := NewTrimmer(Options{Targets: targets, Interval: time.Hour, Logger: testLogger(&logBuffer{})})
	stop := runTrimmer(t, tr)
	waitFor(t, trimmed, "the trim at start")
	tr.Kick()
	waitFor(t, trimmed, "the trim after a kick")
	stop()
	if got := n.Load(); got != 2 {
		t.Fatalf("%d trims, want 2", got)
	}
}

// Kicks never block and coalesce: a burst of them while no trim can run
// leads to one trim.
func TestTrimmerKicksCoalesce(t *testing.T) {
	targets, n, trimmed := countingTargets()
	tr := NewTrimmer(Options{Targets: targets, Interval: time.Hour, Logger: testLogger(&logBuffer{})})
	for range 1000 {
		tr.Kick() // no Run yet: would block if kicks queued
	}
	stop := runTrimmer(t, tr)
	waitFor(t, trimmed, "the trim at start")
	waitFor(t, trimmed, "the trim for the kicks")
	// Give a wrongly queued second kick time to show up.
	time.Sleep(50 * time.Millisecond)
	stop()
	if got := n.Load(); got != 2 {
		t.Fatalf("%d trims for 1000 kicks, want 2 (start + one coalesced kick)", got)
	}
}

func TestTrimmerRunsEveryInterval(t *testing.T) {
	targets, _, trimmed := countingTargets()
	tr := NewTrimmer(Options{Targets: targets, Interval: 5 * time.Millisecond, Logger: testLogger(&logBuffer{})})
	runTrimmer(t, tr)
	for i := range 4 {
		waitFor(t, trimmed, fmt.Sprintf("periodic trim %d", i))
	}
}

func TestTrimmerRunReturnsOnCancelledContext(t *testing.T) {
	targets, n, _ := countingTargets()
	tr := NewTrimmer(Options{Targets: targets, Logger: testLogger(&logBuffer{})})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n.Load() != 0 {
		t.Fatalf("Run trimmed with a cancelled context")
	}
}

// The trimmer runs (periodically, on kicks and by TrimNow) while a producer
// appends and rolls and readers read across the log start. Run with -race.
// Readers must see either a record or OUT_OF_RANGE below the start, and the
// log must always keep the last RetentionRecords records.
func TestTrimmerRacesAppendsAndReads(t *testing.T) {
	const keep = 50
	clock := &fakeClock{t: t0}
	l := newFakeLog(clock.Now, 7)
	var policyMu sync.Mutex
	policy := Policy{RetentionRecords: keep}
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			policyMu.Lock()
			defer policyMu.Unlock()
			return []Target{{Topic: "t", Policy: policy, Log: l}}, nil
		},
		Interval: time.Millisecond,
		Now:      clock.Now,
		Logger:   testLogger(&logBuffer{}),
	})
	stop := runTrimmer(t, tr)

	var wg sync.WaitGroup
	done := make(chan struct{})
	var reads, outOfRange atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				select {
				case <-done:
					return
				default:
				}
				start, end := l.Bounds()
				if start > 0 && end-start < keep {
					t.Errorf("log kept [%d, %d): fewer than the last %d records", start, end, keep)
					return
				}
				off := start - 5 + rng.Int64N(end-start+10)
				ts, err := l.Read(off)
				var oor *log.OutOfRangeError
				switch {
				case err == nil:
					if ts != t0.UnixMilli()+off {
						t.Errorf("read %d: timestamp %d, want %d", off, ts, t0.UnixMilli()+off)
						return
					}
					reads.Add(1)
				case errors.As(err, &oor):
					if off >= oor.StartOffset && off < oor.HighWatermark {
						t.Errorf("read %d: out of range %v though inside it", off, err)
						return
					}
					outOfRange.Add(1)
				default:
					t.Errorf("read %d: %v", off, err)
					return
				}
			}
		}()
	}
	// The producer: one record at a time, stamped with its offset; kick the
	// trimmer on every roll, sometimes trim by hand, once change the policy.
	for off := int64(0); off < 3000; off++ {
		if l.Append(1, t0.UnixMilli()+off) {
			tr.Kick()
		}
		if off%500 == 0 {
			if _, err := tr.TrimNow(); err != nil {
				t.Error(err)
			}
		}
		if off == 1500 {
			policyMu.Lock()
			policy = Policy{RetentionRecords: keep, RetentionBytes: 200 * fakeRecordBytes}
			policyMu.Unlock()
		}
	}
	close(done)
	wg.Wait()
	stop()
	if _, err := tr.TrimNow(); err != nil {
		t.Fatal(err)
	}
	start, end := l.Bounds()
	if end-start < keep || end-start > keep+7 {
		t.Fatalf("after the run the log holds [%d, %d), want the last %d to %d records", start, end, keep, keep+7)
	}
	if got := counters(t, tr)["logd_retention_deleted_records_total{t}"]; got != float64(start) {
		t.Fatalf("deleted records counter %v, want %d (the log start)", got, start)
	}
	t.Logf("%d reads, %d out of range; log [%d, %d)", reads.Load(), outOfRange.Load(), start, end)
}

// A target without a log (a partition opening or closing) is skipped.
func TestTrimmerSkipsTargetWithoutLog(t *testing.T) {
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) { return []Target{{Topic: "t", Policy: Policy{RetentionRecords: 1}}}, nil },
		Logger:  testLogger(&logBuffer{}),
	})
	if res, err := tr.TrimNow(); err != nil || res != (Result{}) {
		t.Fatalf("TrimNow = %+v, %v", res, err)
	}
}

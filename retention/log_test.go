package retention

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// *log.Log is the Log the server hands the Trimmer.
var _ Log = (*log.Log)(nil)

// TestTrimmerOnRealLog runs once the storage engine opens logs: segments
// rolled by hand, trimmed by time then by record count, never the active
// one, and reads below the new start answer OUT_OF_RANGE.
func TestTrimmerOnRealLog(t *testing.T) {
	clock := &fakeClock{t: t0}
	l, err := log.Open(t.TempDir(), log.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer l.Close()

	// Six segments of 10 records, the newest record of segment i stamped
	// (6-i) days before t0; then an active segment with 3 fresh records.
	for i := range 6 {
		recs := make([]batch.Record, 10)
		for j := range recs {
			recs[j] = batch.Record{Timestamp: t0.Add(-time.Duration(6-i) * day).UnixMilli(), Value: []byte("v")}
		}
		if _, err := l.Append(batch.Encode(nil, 0, batch.NoProducer, recs)); err != nil {
			t.Fatalf("append: %v", err)
		}
		if err := l.Roll(); err != nil {
			t.Fatalf("roll: %v", err)
		}
	}
	fresh := []batch.Record{{Timestamp: t0.UnixMilli()}, {Timestamp: t0.UnixMilli()}, {Timestamp: t0.UnixMilli()}}
	if _, err := l.Append(batch.Encode(nil, 0, batch.NoProducer, fresh)); err != nil {
		t.Fatalf("append: %v", err)
	}

	policy := Policy{RetentionTime: 4*day - time.Hour}
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) { return []Target{{Topic: "t", Policy: policy, Log: l}}, nil },
		Now:     clock.Now,
		Logger:  testLogger(&logBuffer{}),
	})
	// Older than 3d23h: the segments stamped 6, 5 and 4 days back.
	if res, err := tr.TrimNow(); err != nil || res.Segments != 3 || res.Records != 30 {
		t.Fatalf("trim by time = %+v, %v, want 3 segments of 30 records; segments now %+v", res, err, l.Segments())
	}
	if got := l.StartOffset(); got != 30 {
		t.Fatalf("log start = %d, want 30", got)
	}
	var oor *log.OutOfRangeError
	if _, err := l.Read(29, 1<<20); !errors.As(err, &oor) || oor.StartOffset != 30 {
		t.Fatalf("read below the start: %v, want OUT_OF_RANGE from 30", err)
	}
	if b, err := l.Read(30, 1<<20); err != nil || len(b) == 0 {
		t.Fatalf("read at the start: %d bytes, %v", len(b), err)
	}

	// Keep only the last record: every closed segment goes, the active one
	// (holding offsets 60-62) stays.
	policy = Policy{RetentionRecords: 1}
	if res, err := tr.TrimNow(); err != nil || res.Segments != 3 {
		t.Fatalf("trim by records = %+v, %v", res, err)
	}
	segs := l.Segments()
	if len(segs) != 1 || !segs[0].Active || l.StartOffset() != 60 || l.HighWatermark() != 63 {
		t.Fatalf("after trimming all closed segments: start %d, hw %d, segments %+v", l.StartOffset(), l.HighWatermark(), segs)
	}
}

// Reads race trims on the real log, with a producer appending and rolling:
// a read gets its batch or OUT_OF_RANGE below the start, never another
// error or another offset's data. Run with -race.
func TestTrimRacesReadsOnRealLog(t *testing.T) {
	const keep = 100
	l, err := log.Open(t.TempDir(), log.Options{SegmentBytes: 8 << 10, Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer l.Close()
	tr := NewTrimmer(Options{
		Targets: func() ([]Target, error) {
			return []Target{{Topic: "t", Policy: Policy{RetentionRecords: keep}, Log: l}}, nil
		},
		Interval: time.Millisecond,
		Logger:   testLogger(&logBuffer{}),
	})
	stop := runTrimmer(t, tr)

	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads, outOfRange atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			for {
				select {
				case <-done:
					return
				default:
				}
				start, hw := l.StartOffset(), l.HighWatermark()
				off := max(0, start-3+rng.Int64N(hw-start+4))
				b, err := l.Read(off, 1024)
				var oor *log.OutOfRangeError
				switch {
				case err == nil && len(b) == 0:
					// at the high watermark
				case err == nil:
					info, err := batch.ParseHeader(b)
					if err != nil || info.BaseOffset != off {
						t.Errorf("read %d: batch %+v, %v", off, info, err)
						return
					}
					reads.Add(1)
				case errors.As(err, &oor):
					if off >= oor.StartOffset && off <= oor.HighWatermark {
						t.Errorf("read %d: %v though inside the range", off, err)
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
	value := []byte(strings.Repeat("v", 200))
	segments := 1
	for i := range 1500 {
		if _, err := l.Append(batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: int64(i), Value: value}})); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if n := len(l.Segments()); n != segments {
			segments = n
			tr.Kick()
		}
	}
	close(done)
	wg.Wait()
	stop()
	if _, err := tr.TrimNow(); err != nil {
		t.Fatal(err)
	}
	start, hw := l.StartOffset(), l.HighWatermark()
	if hw != 1500 || hw-start < keep || start == 0 {
		t.Fatalf("log holds [%d, %d), want [x, 1500) with x > 0 and at least %d records", start, hw, keep)
	}
	if got := counters(t, tr)["logd_retention_deleted_records_total{t}"]; got != float64(start) {
		t.Fatalf("deleted records counter %v, want %d (the log start)", got, start)
	}
	t.Logf("%d reads, %d out of range; log [%d, %d) in %d segments", reads.Load(), outOfRange.Load(), start, hw, len(l.Segments()))
}

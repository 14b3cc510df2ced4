package retention

import (
	"errors"
	"strings"
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
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skipf("log engine not ready: %v", err)
	}
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

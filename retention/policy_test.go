package retention

import (
	"testing"
	"time"

	"github.com/logd/logd/log"
)

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// seg is a closed segment of offsets [base, next) whose newest record was
// written age before t0, size bytes on disk.
func seg(base, next, size int64, age time.Duration) log.SegmentInfo {
	return log.SegmentInfo{
		BaseOffset:   base,
		NextOffset:   next,
		Size:         size,
		MaxTimestamp: t0.Add(-age).UnixMilli(),
		Created:      t0.Add(-age - time.Hour),
	}
}

func active(s log.SegmentInfo) log.SegmentInfo {
	s.Active = true
	return s
}

// empty is a closed segment holding no record, created age before t0.
func empty(base int64, age time.Duration) log.SegmentInfo {
	return log.SegmentInfo{BaseOffset: base, NextOffset: base, Size: 0, MaxTimestamp: -1, Created: t0.Add(-age)}
}

type decideCase struct {
	name   string
	segs   []log.SegmentInfo
	policy Policy
	want   int // segments deletable
	reason Reason
}

func runDecide(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.segs, t0, tt.policy)
			if d.Segments != tt.want || d.Reason != tt.reason {
				t.Fatalf("Decide = %+v, want %d segments by %v", d, tt.want, tt.reason)
			}
			// Before covers exactly the deletable prefix.
			wantBefore := int64(0)
			if len(tt.segs) > 0 {
				wantBefore = tt.segs[0].BaseOffset
			}
			var bytes, records int64
			for _, s := range tt.segs[:tt.want] {
				wantBefore = s.NextOffset
				bytes += s.Size
				records += s.NextOffset - s.BaseOffset
			}
			if d.Before != wantBefore || d.Bytes != bytes || d.Records != records {
				t.Fatalf("Decide = %+v, want Before %d, %d bytes, %d records", d, wantBefore, bytes, records)
			}
		})
	}
}

func TestDecideTime(t *testing.T) {
	week := Policy{RetentionTime: 7 * day}
	runDecide(t, []decideCase{
		{"no segments", nil, week, 0, 0},
		{"only an old active segment", []log.SegmentInfo{active(seg(0, 10, 100, 30*day))}, week, 0, 0},
		{"old closed, young rest", []log.SegmentInfo{
			seg(0, 10, 100, 10*day), seg(10, 20, 100, 8*day), seg(20, 30, 100, 6*day), active(seg(30, 35, 50, 0)),
		}, week, 2, ByTime},
		{"all closed old, active old too", []log.SegmentInfo{
			seg(0, 10, 100, 10*day), seg(10, 20, 100, 9*day), active(seg(20, 25, 50, 8*day)),
		}, week, 2, ByTime},
		{"exactly at the limit stays", []log.SegmentInfo{
			seg(0, 10, 100, 7*day), active(seg(10, 15, 50, 0)),
		}, week, 0, 0},
		{"one ms past the limit goes", []log.SegmentInfo{
			seg(0, 10, 100, 7*day+time.Millisecond), active(seg(10, 15, 50, 0)),
		}, week, 1, ByTime},
		{"empty segment aged by creation", []log.SegmentInfo{
			empty(0, 8*day), empty(0, 6*day), active(seg(0, 5, 50, 0)),
		}, week, 1, ByTime},
		{"a newer segment stops the prefix", []log.SegmentInfo{
			seg(0, 10, 100, 10*day), seg(10, 20, 100, 1*day), seg(20, 30, 100, 10*day), active(seg(30, 35, 50, 0)),
		}, week, 1, ByTime},
		{"future timestamp stays", []log.SegmentInfo{
			seg(0, 10, 100, -day), active(seg(10, 15, 50, 0)),
		}, week, 0, 0},
		{"zero is unlimited", []log.SegmentInfo{
			seg(0, 10, 100, 1000*day), active(seg(10, 15, 50, 0)),
		}, Policy{}, 0, 0},
		{"-1 is unlimited", []log.SegmentInfo{
			seg(0, 10, 100, 1000*day), active(seg(10, 15, 50, 0)),
		}, Policy{RetentionTime: -1}, 0, 0},
		{"default policy", []log.SegmentInfo{
			seg(0, 10, 100, 8*day), seg(10, 20, 100, 6*day), active(seg(20, 25, 50, 0)),
		}, DefaultPolicy(), 1, ByTime},
	})
}

func TestDecideBytes(t *testing.T) {
	// Four closed segments of 100 bytes and a 50-byte active one: 450.
	segs := []log.SegmentInfo{
		seg(0, 10, 100, 0), seg(10, 20, 100, 0), seg(20, 30, 100, 0), seg(30, 40, 100, 0), active(seg(40, 45, 50, 0)),
	}
	bytes := func(n int64) Policy { return Policy{RetentionBytes: n} }
	runDecide(t, []decideCase{
		{"under the limit", segs, bytes(1000), 0, 0},
		{"at the limit", segs, bytes(450), 0, 0},
		{"one byte over keeps the segment: its removal would go below", segs, bytes(449), 0, 0},
		{"remaining would equal the limit", segs, bytes(350), 1, ByBytes},
		{"remaining stays at least the limit", segs, bytes(300), 1, ByBytes},
		{"two segments", segs, bytes(250), 2, ByBytes},
		{"never the active segment", segs, bytes(1), 4, ByBytes},
		{"unlimited", segs, bytes(-1), 0, 0},
		{"only active", []log.SegmentInfo{active(seg(0, 1000, 1<<30, 0))}, bytes(1), 0, 0},
	})
}

func TestDecideRecords(t *testing.T) {
	segs := []log.SegmentInfo{
		seg(100, 110, 100, 0), seg(110, 120, 100, 0), seg(120, 130, 100, 0), active(seg(130, 135, 50, 0)),
	}
	records := func(n int64) Policy { return Policy{RetentionRecords: n} }
	runDecide(t, []decideCase{
		{"keep 5: only the active segment's", segs, records(5), 3, ByRecords},
		{"keep 6: one record of the third segment", segs, records(6), 2, ByRecords},
		{"keep 15", segs, records(15), 2, ByRecords},
		{"keep 16", segs, records(16), 1, ByRecords},
		{"keep all 35", segs, records(35), 0, 0},
		{"keep more than stored", segs, records(1000), 0, 0},
		{"keep 1: never the active segment", segs, records(1), 3, ByRecords},
		{"unlimited", segs, records(0), 0, 0},
	})
}

func TestDecideCombined(t *testing.T) {
	segs := []log.SegmentInfo{
		seg(0, 10, 100, 10*day), seg(10, 20, 100, 5*day), seg(20, 30, 100, 4*day), seg(30, 40, 100, 3*day), active(seg(40, 45, 50, 0)),
	}
	runDecide(t, []decideCase{
		{"time wins", segs, Policy{RetentionTime: 4*day + time.Hour, RetentionBytes: 350, RetentionRecords: 1000}, 2, ByTime | ByBytes},
		{"bytes win", segs, Policy{RetentionTime: 7 * day, RetentionBytes: 150, RetentionRecords: 1000}, 3, ByTime | ByBytes},
		{"records win", segs, Policy{RetentionTime: 7 * day, RetentionBytes: 400, RetentionRecords: 5}, 4, ByTime | ByRecords},
		{"none", segs, Policy{RetentionTime: 30 * day, RetentionBytes: 10000, RetentionRecords: 45}, 0, 0},
		{"everything would go but the active", segs, Policy{RetentionTime: time.Nanosecond, RetentionBytes: 1, RetentionRecords: 1}, 4, ByTime | ByBytes | ByRecords},
	})
}

// However the list is marked, neither the active segment nor anything after
// it, nor the last segment, is ever deletable.
func TestDecideNeverActive(t *testing.T) {
	all := Policy{RetentionTime: time.Nanosecond, RetentionBytes: 1, RetentionRecords: 1}
	runDecide(t, []decideCase{
		{"last segment unmarked", []log.SegmentInfo{seg(0, 10, 100, 10*day), seg(10, 20, 100, 10*day)}, all, 1, ByTime | ByBytes | ByRecords},
		{"active in the middle", []log.SegmentInfo{seg(0, 10, 100, 10*day), active(seg(10, 20, 100, 10*day)), seg(20, 30, 100, 10*day)}, all, 1, ByTime | ByBytes | ByRecords},
		{"first active", []log.SegmentInfo{active(seg(0, 10, 100, 10*day)), seg(10, 20, 100, 10*day)}, all, 0, 0},
		{"single segment", []log.SegmentInfo{seg(0, 10, 100, 10*day)}, all, 0, 0},
	})
}

func TestReasonString(t *testing.T) {
	for r, want := range map[Reason]string{0: "none", ByTime: "time", ByBytes | ByRecords: "bytes+records", ByTime | ByBytes | ByRecords: "time+bytes+records"} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", r, got, want)
		}
	}
}

func TestPolicyFromLimits(t *testing.T) {
	tests := []struct {
		ms, bytes, records int64
		want               Policy
	}{
		{7 * 24 * 3600 * 1000, -1, -1, DefaultPolicy()},
		{-1, 1 << 30, 1000, Policy{RetentionTime: Unlimited, RetentionBytes: 1 << 30, RetentionRecords: 1000}},
		{1, -1, -1, Policy{RetentionTime: time.Millisecond, RetentionBytes: -1, RetentionRecords: -1}},
		{1 << 62, -1, -1, Policy{RetentionTime: Unlimited, RetentionBytes: -1, RetentionRecords: -1}},
	}
	for _, tt := range tests {
		if got := PolicyFromLimits(tt.ms, tt.bytes, tt.records); got != tt.want {
			t.Errorf("PolicyFromLimits(%d, %d, %d) = %+v, want %+v", tt.ms, tt.bytes, tt.records, got, tt.want)
		}
	}
}

// A log start moved by DeleteRecords condemns the closed segments wholly
// below it, whatever the policy; never the one it lies in, nor the active.
func TestDecideWithStart(t *testing.T) {
	segs := []log.SegmentInfo{
		seg(100, 110, 100, 0), seg(110, 120, 100, 0), seg(120, 130, 100, 0), active(seg(130, 135, 50, 0)),
	}
	for _, c := range []struct {
		start int64
		want  int
	}{{-1, 0}, {100, 0}, {109, 0}, {110, 1}, {125, 2}, {130, 3}, {135, 3}} {
		d := DecideWithStart(segs, c.start, t0, Policy{})
		if d.Segments != c.want || (c.want > 0) != (d.Reason == ByLogStart) {
			t.Errorf("start %d: %d segments (%v), want %d", c.start, d.Segments, d.Reason, c.want)
		}
		if c.want > 0 && d.Before != segs[c.want-1].NextOffset {
			t.Errorf("start %d: before %d", c.start, d.Before)
		}
	}
	if d := DecideWithStart(segs, 110, t0, Policy{RetentionRecords: 15}); d.Segments != 2 || d.Reason != ByLogStart|ByRecords {
		t.Errorf("with a records limit: %d segments (%v), want 2 (log start+records)", d.Segments, d.Reason)
	}
}

package retention

import (
	"sync"
	"time"

	"github.com/logd/logd/log"
)

// fakeLog is an in-memory log with the segment behaviour Trimmer relies on:
// appends go to the active segment, which rolls every segRecords records;
// DeleteSegmentsBefore removes whole closed segments from the front and
// advances the start; reads below the start fail with OUT_OF_RANGE.
type fakeLog struct {
	mu         sync.Mutex
	now        func() time.Time
	segRecords int
	segs       []fakeSegment // oldest first, the last active
	start      int64
	deleteErr  error
	deletes    int
}

type fakeSegment struct {
	info log.SegmentInfo
	ts   []int64 // timestamp of each record, ms
}

const fakeRecordBytes = 10

func newFakeLog(now func() time.Time, segRecords int) *fakeLog {
	f := &fakeLog{now: now, segRecords: segRecords}
	f.segs = []fakeSegment{f.newSegment(0)}
	return f
}

func (f *fakeLog) newSegment(base int64) fakeSegment {
	return fakeSegment{info: log.SegmentInfo{BaseOffset: base, NextOffset: base, MaxTimestamp: -1, Created: f.now(), Active: true}}
}

// Append adds n records stamped ts (ms) and reports whether it rolled.
func (f *fakeLog) Append(n int, ts int64) (rolled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		a := &f.segs[len(f.segs)-1]
		a.ts = append(a.ts, ts)
		a.info.NextOffset++
		a.info.Size += fakeRecordBytes
		a.info.MaxTimestamp = max(a.info.MaxTimestamp, ts)
		if len(a.ts) >= f.segRecords {
			a.info.Active = false
			f.segs = append(f.segs, f.newSegment(a.info.NextOffset))
			rolled = true
		}
	}
	return rolled
}

// Read returns the timestamp of the record at off.
func (f *fakeLog) Read(off int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.segs[len(f.segs)-1].info.NextOffset
	if off < f.start || off >= end {
		return 0, &log.OutOfRangeError{Offset: off, StartOffset: f.start, HighWatermark: end}
	}
	for _, s := range f.segs {
		if off < s.info.NextOffset {
			return s.ts[off-s.info.BaseOffset], nil
		}
	}
	panic("unreachable")
}

// Bounds returns the start and end offsets.
func (f *fakeLog) Bounds() (start, end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.start, f.segs[len(f.segs)-1].info.NextOffset
}

func (f *fakeLog) Segments() []log.SegmentInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]log.SegmentInfo, len(f.segs))
	for i, s := range f.segs {
		out[i] = s.info
	}
	return out
}

func (f *fakeLog) DeleteSegmentsBefore(off int64) ([]log.SegmentInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes++
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	var deleted []log.SegmentInfo
	for len(f.segs) > 1 && !f.segs[0].info.Active && f.segs[0].info.NextOffset <= off {
		deleted = append(deleted, f.segs[0].info)
		f.segs = f.segs[1:]
	}
	f.start = f.segs[0].info.BaseOffset
	return deleted, nil
}

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

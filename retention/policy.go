package retention

import (
	"math"
	"strings"
	"time"

	"github.com/logd/logd/log"
)

// DefaultRetentionTime is a new topic's RetentionTime.
const DefaultRetentionTime = 7 * 24 * time.Hour

// Unlimited is the conventional value of a limit that does not apply; any
// value <= 0 means the same.
const Unlimited = -1

// Policy is a topic's retention policy, applied to each partition. A limit
// <= 0 is unlimited.
type Policy struct {
	RetentionTime    time.Duration
	RetentionBytes   int64 // per partition
	RetentionRecords int64 // per partition
}

// DefaultPolicy is a new topic's policy: 7 days, unlimited bytes and
// records.
func DefaultPolicy() Policy {
	return Policy{RetentionTime: DefaultRetentionTime, RetentionBytes: Unlimited, RetentionRecords: Unlimited}
}

// PolicyFromLimits builds a Policy from a topic config's stored limits:
// retention time in ms, bytes and records, each -1 (or <= 0) for unlimited.
// A time too large for a time.Duration (over ~292 years) is unlimited
// rather than wrapping around.
func PolicyFromLimits(retentionMs, retentionBytes, retentionRecords int64) Policy {
	p := Policy{RetentionBytes: retentionBytes, RetentionRecords: retentionRecords}
	switch {
	case retentionMs <= 0 || retentionMs > int64(math.MaxInt64/time.Millisecond):
		p.RetentionTime = Unlimited
	default:
		p.RetentionTime = time.Duration(retentionMs) * time.Millisecond
	}
	return p
}

// Reason is the set of limits that condemned segments.
type Reason uint8

const (
	ByTime Reason = 1 << iota
	ByBytes
	ByRecords
	// ByLogStart: every record of the segment lies below the log start
	// offset (DeleteRecords moved it), so none is ever read again.
	ByLogStart
)

func (r Reason) String() string {
	var parts []string
	for _, x := range []struct {
		r    Reason
		name string
	}{{ByTime, "time"}, {ByBytes, "bytes"}, {ByRecords, "records"}, {ByLogStart, "log start"}} {
		if r&x.r != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Decision is what the policy lets go in one partition.
type Decision struct {
	// Before is the offset to pass to DeleteSegmentsBefore: the deletable
	// segments are exactly the first Segments ones, and all their records
	// lie below Before. With nothing to delete it is the first segment's
	// base offset (0 for no segments).
	Before   int64
	Segments int
	Bytes    int64 // their size on disk
	Records  int64 // offsets they span
	Reason   Reason
}

// Decide returns which whole closed segments the policy no longer needs.
// segs are a partition's segments, oldest first, the last one active (as
// log.Log.Segments returns them). It is pure: the same input gives the same
// decision.
func Decide(segs []log.SegmentInfo, now time.Time, p Policy) Decision {
	return DecideWithStart(segs, -1, now, p)
}

// DecideWithStart is Decide for a log whose start offset (log.StartOffset)
// is start: a closed segment whose records all lie below it goes too
// (ByLogStart), whatever the policy. start < 0 is Decide.
func DecideWithStart(segs []log.SegmentInfo, start int64, now time.Time, p Policy) Decision {
	if len(segs) == 0 {
		return Decision{}
	}
	// closed: segments before the first active one, never the last.
	closed := len(segs) - 1
	for i := range closed {
		if segs[i].Active {
			closed = i
			break
		}
	}

	var n int
	var reason Reason
	take := func(k int, r Reason) {
		if k > 0 {
			reason |= r
		}
		n = max(n, k)
	}

	if p.RetentionTime > 0 {
		cutoff := now.Add(-p.RetentionTime).UnixMilli()
		k := 0
		for k < closed && newestMs(segs[k]) < cutoff {
			k++
		}
		take(k, ByTime)
	}
	if p.RetentionBytes > 0 {
		var total int64
		for _, s := range segs {
			total += s.Size
		}
		excess := total - p.RetentionBytes
		k := 0
		for k < closed && excess-segs[k].Size >= 0 {
			excess -= segs[k].Size
			k++
		}
		take(k, ByBytes)
	}
	if p.RetentionRecords > 0 {
		keepFrom := segs[len(segs)-1].NextOffset - p.RetentionRecords
		k := 0
		for k < closed && segs[k].NextOffset <= keepFrom {
			k++
		}
		take(k, ByRecords)
	}
	if start >= 0 {
		k := 0
		for k < closed && segs[k].NextOffset <= start {
			k++
		}
		take(k, ByLogStart)
	}

	d := Decision{Before: segs[0].BaseOffset, Segments: n, Reason: reason}
	for _, s := range segs[:n] {
		d.Bytes += s.Size
		d.Records += s.NextOffset - s.BaseOffset
		d.Before = s.NextOffset
	}
	return d
}

// newestMs is when a segment's newest record was written, in ms: its max
// timestamp, or its creation time when it holds no record.
func newestMs(s log.SegmentInfo) int64 {
	if s.MaxTimestamp < 0 {
		return s.Created.UnixMilli()
	}
	return s.MaxTimestamp
}

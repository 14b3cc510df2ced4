package offsets

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ResetKind says what a reset target names.
type ResetKind int

const (
	ResetEarliest ResetKind = iota + 1 // the log start offset
	ResetLatest                        // the high watermark: only records produced from now on
	ResetOffset                        // an explicit offset, clamped to [log start, high watermark]
	ResetTime                          // the first record with timestamp >= an absolute time
	ResetAgo                           // the first record with timestamp >= now - a duration
)

// ResetSpec is a parsed reset target: what `logd offsets reset --to` and
// `logd consume --from` accept. It is resolved per partition by Resolve.
type ResetSpec struct {
	Kind   ResetKind
	Offset int64         // ResetOffset
	Time   time.Time     // ResetTime
	Ago    time.Duration // ResetAgo, > 0
}

// resetForms is the help text every parse error ends with.
const resetForms = "want earliest, latest, an offset (>= 0), an RFC 3339 time (2026-01-02T15:04:05Z) or -DURATION (-90m, -2d, -1d12h)"

// ParseResetSpec parses earliest | latest | OFFSET | RFC3339 | -DURATION.
// DURATION is a Go duration, optionally led by whole days ("2d", "1d12h").
func ParseResetSpec(s string) (ResetSpec, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return ResetSpec{}, fmt.Errorf("%w: empty; %s", ErrInvalidReset, resetForms)
	case "earliest":
		return ResetSpec{Kind: ResetEarliest}, nil
	case "latest":
		return ResetSpec{Kind: ResetLatest}, nil
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if isDigits(rest) {
			return ResetSpec{}, fmt.Errorf("%w: %q is a negative offset; for a time before now give a unit (-%sm, -%sh); %s", ErrInvalidReset, s, rest, rest, resetForms)
		}
		d, err := parseAgo(rest)
		if err != nil {
			return ResetSpec{}, fmt.Errorf("%w: %q: %v; %s", ErrInvalidReset, s, err, resetForms)
		}
		return ResetSpec{Kind: ResetAgo, Ago: d}, nil
	}
	if isDigits(s) {
		off, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return ResetSpec{}, fmt.Errorf("%w: offset %q: %v", ErrInvalidReset, s, err)
		}
		return ResetSpec{Kind: ResetOffset, Offset: off}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return ResetSpec{}, fmt.Errorf("%w: %q; %s", ErrInvalidReset, s, resetForms)
	}
	return ResetSpec{Kind: ResetTime, Time: t}, nil
}

// String returns the spec in the form ParseResetSpec reads.
func (r ResetSpec) String() string {
	switch r.Kind {
	case ResetEarliest:
		return "earliest"
	case ResetLatest:
		return "latest"
	case ResetOffset:
		return strconv.FormatInt(r.Offset, 10)
	case ResetTime:
		return r.Time.Format(time.RFC3339Nano)
	case ResetAgo:
		return "-" + r.Ago.String()
	}
	return fmt.Sprintf("ResetKind(%d)", int(r.Kind))
}

// PartitionLog is what resolving a reset needs of a partition. *log.Log
// satisfies it; LogFuncs adapts plain functions (a remote partition, a test).
type PartitionLog interface {
	StartOffset() int64
	HighWatermark() int64
	// OffsetForTime returns the first offset whose timestamp is >= ts (ms),
	// or the high watermark when there is none.
	OffsetForTime(ts int64) (int64, error)
}

// LogFuncs is a PartitionLog made of functions.
type LogFuncs struct {
	Start   func() int64
	HW      func() int64
	ForTime func(ts int64) (int64, error)
}

func (f LogFuncs) StartOffset() int64                    { return f.Start() }
func (f LogFuncs) HighWatermark() int64                  { return f.HW() }
func (f LogFuncs) OffsetForTime(ts int64) (int64, error) { return f.ForTime(ts) }

// Resolution is a reset target resolved in one partition.
type Resolution struct {
	Offset int64
	// Clamped is true when an explicit offset lay outside [log start, high
	// watermark] and Offset is the nearer end instead; Requested keeps the
	// offset asked for so the caller can warn, as Kafka's tool does.
	Clamped   bool
	Requested int64
}

// Resolve turns the spec into an offset in one partition. The result always
// lies in [log start, high watermark]. Explicit offsets outside that range
// are clamped to the nearer end, Kafka's --reset-offsets --to-offset
// behaviour, and reported as Clamped. A time after every record resolves to
// the high watermark. now anchors -DURATION.
func (r ResetSpec) Resolve(now time.Time, l PartitionLog) (Resolution, error) {
	start := l.StartOffset()
	hw := max(l.HighWatermark(), start)
	clamp := func(off int64) int64 { return min(max(off, start), hw) }
	switch r.Kind {
	case ResetEarliest:
		return Resolution{Offset: start, Requested: start}, nil
	case ResetLatest:
		return Resolution{Offset: hw, Requested: hw}, nil
	case ResetOffset:
		if r.Offset < 0 {
			return Resolution{}, fmt.Errorf("%w: offset %d is negative", ErrInvalidReset, r.Offset)
		}
		off := clamp(r.Offset)
		return Resolution{Offset: off, Clamped: off != r.Offset, Requested: r.Offset}, nil
	case ResetTime, ResetAgo:
		t := r.Time
		if r.Kind == ResetAgo {
			t = now.Add(-r.Ago)
		}
		off, err := l.OffsetForTime(t.UnixMilli())
		if err != nil {
			return Resolution{}, fmt.Errorf("offset for time %s: %w", t.UTC().Format(time.RFC3339Nano), err)
		}
		off = clamp(off)
		return Resolution{Offset: off, Requested: off}, nil
	}
	return Resolution{}, fmt.Errorf("%w: unknown kind %d", ErrInvalidReset, int(r.Kind))
}

// parseAgo parses a positive Go duration optionally led by whole days.
func parseAgo(s string) (time.Duration, error) {
	var days int64
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		if !isDigits(s[:i]) {
			return 0, fmt.Errorf("days must be a whole number before 'd'")
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("too many days")
		}
		days, s = n, s[i+1:]
	}
	var d time.Duration
	if s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
		if d < 0 {
			return 0, fmt.Errorf("double negative")
		}
	}
	dd := time.Duration(days) * 24 * time.Hour
	if d > math.MaxInt64-dd {
		return 0, fmt.Errorf("duration too long")
	}
	if d+dd <= 0 {
		return 0, fmt.Errorf("duration must be positive")
	}
	return d + dd, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

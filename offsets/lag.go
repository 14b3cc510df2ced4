package offsets

// LagInfo is where a group stands in one partition.
type LagInfo struct {
	// Lag is high watermark - committed (docs/architecture.md), never negative. For a
	// trimmed offset it includes the Lost records.
	Lag int64
	// Trimmed is true when retention removed records the group had not yet
	// consumed: committed < log start.
	Trimmed bool
	// Lost is how many of those records are gone: log start - committed when
	// Trimmed, else 0.
	Lost int64
	// ResumeAt is where the group's consumer reads next: the committed
	// offset, or the log start when it was trimmed.
	ResumeAt int64
}

// Lag computes a group's lag in one partition from its committed offset and
// the partition's log start and high watermark.
//
// A committed offset below the log start is not clamped silently: the result
// is marked Trimmed with the Lost count, and the consumer resumes at the log
// start. A committed offset above the high watermark (the log was truncated
// after the commit) has lag 0 and resumes where committed; the read then
// answers OUT_OF_RANGE and the consumer's reset rule applies. A negative
// committed offset means the group has committed nothing: it resumes at the
// log start (logd consume --group starts at earliest by default) and its lag
// is what remains from there.
func Lag(committed, logStart, highWatermark int64) LagInfo {
	highWatermark = max(highWatermark, logStart)
	if committed < 0 {
		return LagInfo{Lag: highWatermark - logStart, ResumeAt: logStart}
	}
	info := LagInfo{Lag: max(highWatermark-committed, 0), ResumeAt: committed}
	if committed < logStart {
		info.Trimmed = true
		info.Lost = logStart - committed
		info.ResumeAt = logStart
	}
	return info
}

package client

import (
	"fmt"
	"time"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Position is a place in a partition: its earliest or latest offset, an
// explicit offset, or the first offset at or after a time. The zero value is
// Earliest.
type Position struct {
	kind   positionKind
	offset int64
	time   time.Time
}

type positionKind int

const (
	posEarliest positionKind = iota
	posLatest
	posOffset
	posTime
)

// Earliest is the log start offset: the oldest record still held.
func Earliest() Position { return Position{kind: posEarliest} }

// Latest is the high watermark: the offset the next record will get.
func Latest() Position { return Position{kind: posLatest} }

// AtOffset is an explicit offset.
func AtOffset(off int64) Position { return Position{kind: posOffset, offset: off} }

// AtTime is the first offset whose record timestamp is >= t (the high
// watermark when every record is older).
func AtTime(t time.Time) Position { return Position{kind: posTime, time: t} }

// Offset returns the explicit offset of an AtOffset position.
func (p Position) Offset() (int64, bool) { return p.offset, p.kind == posOffset }

// String is "earliest", "latest", "offset N" or "time RFC3339".
func (p Position) String() string {
	switch p.kind {
	case posLatest:
		return "latest"
	case posOffset:
		return fmt.Sprintf("offset %d", p.offset)
	case posTime:
		return "time " + p.time.UTC().Format(time.RFC3339Nano)
	}
	return "earliest"
}

// spec is the ListOffsets spec and timestamp of a non-offset position.
func (p Position) spec() (logdv1.OffsetSpec, int64) {
	switch p.kind {
	case posLatest:
		return logdv1.OffsetSpec_OFFSET_SPEC_LATEST, 0
	case posTime:
		return logdv1.OffsetSpec_OFFSET_SPEC_TIMESTAMP, p.time.UnixMilli()
	}
	return logdv1.OffsetSpec_OFFSET_SPEC_EARLIEST, 0
}

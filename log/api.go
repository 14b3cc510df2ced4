package log

// This file holds the types of the contract the rest of logd codes against;
// the Log's methods live in log.go (open, close, accessors), append.go,
// commit.go (group commit, high watermark), read.go and truncate.go.

import (
	"errors"
	"fmt"
	"time"

	"github.com/logd/logd/internal/batch"
)

// Sentinel errors. Errors returned by this package wrap one of them with
// context (segment, file position, offsets).
var (
	ErrCorrupt          = errors.New("log: corrupt data")
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	ErrClosed           = errors.New("log: closed")
	ErrNotFound         = errors.New("log: entry not found")
	ErrInvalidBatch     = errors.New("log: invalid batch")
)

// Span is where a batch landed in a log: the offsets of its first and last
// records.
type Span struct {
	BaseOffset, LastOffset int64
}

// OutOfRangeError is returned by reads outside [StartOffset, HighWatermark].
// errors.Is(err, ErrOffsetOutOfRange) holds.
type OutOfRangeError struct {
	Offset        int64
	StartOffset   int64
	HighWatermark int64
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d out of range [%d, %d]", e.Offset, e.StartOffset, e.HighWatermark)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// FsyncMode says when appended bytes are fsynced.
type FsyncMode int

const (
	FsyncAlways   FsyncMode = iota // before acknowledging; concurrent appends share one fsync
	FsyncInterval                  // in the background every Interval; appends return after write
	FsyncNever                     // left to the OS
)

// FsyncPolicy is a FsyncMode with its interval.
type FsyncPolicy struct {
	Mode     FsyncMode
	Interval time.Duration
}

// ParseFsyncPolicy parses "always", "never" or a Go duration ("100ms").
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch s {
	case "always", "":
		return FsyncPolicy{Mode: FsyncAlways}, nil
	case "never":
		return FsyncPolicy{Mode: FsyncNever}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return FsyncPolicy{}, fmt.Errorf("fsync policy %q: want always, never or a positive duration such as 100ms", s)
	}
	return FsyncPolicy{Mode: FsyncInterval, Interval: d}, nil
}

func (p FsyncPolicy) String() string {
	switch p.Mode {
	case FsyncNever:
		return "never"
	case FsyncInterval:
		return p.Interval.String()
	}
	return "always"
}

// Hooks receive measurements for metrics. Any may be nil.
type Hooks struct {
	Fsync   func(d time.Duration) // after each fsync of a segment
	Written func(n int)           // bytes written to disk: segments and indexes
	// Rolled is called, under the log's lock, after the active segment was
	// closed and a new one started. It must not block or call the log.
	Rolled func(closed SegmentInfo)
}

// Options configure a Log. The zero value is usable.
type Options struct {
	FS                  FS            // nil: the operating system's
	SegmentBytes        int64         // roll when the active segment reaches this size; 0: 128 MiB
	SegmentAge          time.Duration // roll when the active segment's first batch is older; 0: never
	Fsync               FsyncPolicy
	IndexIntervalBytes  int  // bytes between sparse index entries; 0: 4096
	ManualHighWatermark bool // the owner (Raft) moves the high watermark with SetHighWatermark
	Now                 func() time.Time
	Hooks               Hooks
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64 // offset after the segment's last record
	FirstIndex   uint64
	Entries      uint64 // Raft entries after the segment header
	Size         int64  // bytes on disk of the segment file
	MaxTimestamp int64  // ms; -1 when the segment holds no record
	Created      time.Time
	Active       bool
}

// LastIndex is the Raft index of the segment's last entry; 0 when it holds
// none.
func (s SegmentInfo) LastIndex() uint64 {
	if s.Entries == 0 {
		return 0
	}
	return s.FirstIndex + s.Entries - 1
}

// RecoveryReport says what Open found and did.
type RecoveryReport struct {
	Segments       int
	ScannedBytes   int64
	TruncatedBytes int64 // cut from the tail (torn or corrupt)
	TruncatedAt    int64 // file position of the cut in the tail segment
	RebuiltIndexes int
}

// EntryKind tells what an Entry holds.
type EntryKind uint8

// KindBatch entries hold one Kafka v2 record batch and own offsets; every
// other kind is opaque to the log (Raft configuration, no-op, ...), stored
// and returned as is, owning no offset and skipped by Read.
const KindBatch EntryKind = 0

// Entry is one Raft log entry as the log stores it.
type Entry struct {
	Index uint64
	Term  uint64
	Kind  EntryKind
	// Data is the entry's bytes: a read fills it for every kind; an
	// append reads it for the kinds that are not KindBatch.
	Data []byte
	// Batch is a KindBatch entry's batch on append (AppendEntries), checked
	// by the caller; a read leaves it empty.
	Batch batch.Checked
}

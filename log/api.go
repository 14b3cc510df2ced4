package log

// This file is the contract the rest of logd codes against. The bodies are
// placeholders until the storage engine lands (issue 2); the signatures are
// stable.

import (
	"context"
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

// FS is the file system the log uses; tests inject faults through it.
type FS interface{}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64 // offset after the segment's last record
	FirstIndex   uint64
	Size         int64 // bytes on disk of the segment file
	MaxTimestamp int64 // ms; -1 when the segment holds no record
	Created      time.Time
	Active       bool
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
	Data  []byte
}

// Log is one partition's append-only log.
type Log struct{}

// Open opens or creates the log in dir, recovering the tail.
func Open(dir string, opts Options) (*Log, error) { return nil, errors.New("log: not implemented") }

// Close syncs and closes the log.
func (l *Log) Close() error { return nil }

// Recovery reports what Open found.
func (l *Log) Recovery() RecoveryReport { return RecoveryReport{} }

// Append stores one batch as the next Raft-less entry and returns its header
// with the assigned offsets, once durable per the fsync policy. b is
// modified in place (base offset, leader epoch) and not retained.
func (l *Log) Append(b []byte) (batch.Info, error) { return batch.Info{}, nil }

// Read returns whole stored batches, concatenated, starting with the one
// that holds offset and below the high watermark, up to maxBytes (at least
// one batch). It returns no bytes when offset equals the high watermark and
// an *OutOfRangeError outside [StartOffset, HighWatermark].
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) { return nil, nil }

// Changed returns a channel closed at the next move of the high watermark
// (or at Close). Waiters take the channel, re-check, then wait on it.
func (l *Log) Changed() <-chan struct{} { return nil }

// Wait blocks until the high watermark passes offset, ctx ends, or the log
// closes.
func (l *Log) Wait(ctx context.Context, offset int64) error { return nil }

// OffsetForTime returns the first offset whose timestamp is >= ts (ms), or
// the high watermark when there is none.
func (l *Log) OffsetForTime(ts int64) (int64, error) { return 0, nil }

// StartOffset is the first offset still stored (the log start offset).
func (l *Log) StartOffset() int64 { return 0 }

// NextOffset is the offset the next appended record will get.
func (l *Log) NextOffset() int64 { return 0 }

// HighWatermark is the offset below which records are readable.
func (l *Log) HighWatermark() int64 { return 0 }

// SetHighWatermark moves the high watermark (ManualHighWatermark logs only),
// clamped to what is durable.
func (l *Log) SetHighWatermark(off int64) {}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo { return nil }

// Size is the bytes on disk of all segments.
func (l *Log) Size() int64 { return 0 }

// Roll closes the active segment and starts a new one.
func (l *Log) Roll() error { return nil }

// DeleteSegmentsBefore deletes whole closed segments whose records are all
// below offset, oldest first, never the active one, and advances the start
// offset. It returns what it deleted.
func (l *Log) DeleteSegmentsBefore(offset int64) ([]SegmentInfo, error) { return nil, nil }

// TruncateFrom removes every record at or after offset (the tail).
func (l *Log) TruncateFrom(offset int64) error { return nil }

// AppendEntries stores Raft entries, durable on return. The first index
// must follow LastIndex, or be any index when the log holds no entry.
func (l *Log) AppendEntries(es []Entry) error { return nil }

// Entry returns the entry at a Raft index, or ErrNotFound.
func (l *Log) Entry(index uint64) (Entry, error) { return Entry{}, ErrNotFound }

// FirstIndex and LastIndex bound the stored Raft indexes (0, 0 when empty).
func (l *Log) FirstIndex() uint64 { return 0 }

// LastIndex is the Raft index of the last stored entry.
func (l *Log) LastIndex() uint64 { return 0 }

// TruncateIndexFrom removes the entries at and after a Raft index.
func (l *Log) TruncateIndexFrom(index uint64) error { return nil }

package log

import (
	"errors"
	"fmt"
	"io"

	"github.com/logd/logd/internal/batch"
)

// Read returns whole stored batches, concatenated, starting with the one
// that holds offset and below the high watermark, up to maxBytes (at least
// one batch). It returns no bytes when offset equals the high watermark and
// an *OutOfRangeError outside [StartOffset, HighWatermark]. Every batch is
// CRC-checked as read; a bad one is an error wrapping ErrCorrupt that names
// the segment file and position (returned once the batches before it have
// been). A Read covers one segment; the next Read continues in the next.
// Entries that are not batches (Raft configuration entries) are skipped.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.ReadInto(nil, offset, maxBytes)
}

// ReadInto is Read into dst's memory: the segment file is read straight
// into dst[:cap(dst)] (its contents are overwritten) and the batches are
// returned as a part of it, without a copy or an allocation. When they do
// not fit (dst too small for maxBytes, or for the first batch, which is
// returned whole even beyond maxBytes) a larger buffer is allocated. A
// capacity of maxBytes + ReadBufferSlack reads most requests with one
// pread. dst must not be used elsewhere until the result is no longer.
func (l *Log) ReadInto(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	for {
		b, next, err := l.readInto(dst, offset, maxBytes)
		if err != errCompactedGap {
			return b, err
		}
		// The rest of the segment was compacted away: its offsets are a
		// gap, and the next batch is in a later segment.
		offset = next
	}
}

// readInto is ReadInto within one segment; at errCompactedGap, next is
// the segment's end.
func (l *Log) readInto(dst []byte, offset int64, maxBytes int) (_ []byte, next int64, _ error) {
	var hw int64
	loc, err := l.locate(func() (*segment, seek, error) {
		hw = l.hw
		if start := l.startLocked(); offset < start || offset > hw {
			return nil, seek{}, &OutOfRangeError{Offset: offset, StartOffset: start, HighWatermark: hw}
		}
		if offset == hw {
			return nil, seek{}, nil
		}
		s := l.segmentForOffset(offset)
		next = s.next
		return s, seek{by: byOffset, key: offset - s.base}, nil
	})
	if loc.s == nil {
		return nil, next, err
	}
	defer l.release(loc.s)
	b, err := readBatches(loc.s, loc.h.f, dst, loc.pos, loc.end, offset, hw, maxBytes)
	return b, next, err
}

// Entry returns the entry at a Raft index, or ErrNotFound.
func (l *Log) Entry(index uint64) (Entry, error) {
	var ord uint32
	loc, err := l.locate(func() (*segment, seek, error) {
		s := l.segmentForIndex(index)
		if s == nil {
			return nil, seek{}, fmt.Errorf("%w: index %d", ErrNotFound, index)
		}
		ord = uint32(index - s.firstIndex)
		return s, seek{by: byOrdinal, key: int64(ord)}, nil
	})
	if loc.s == nil {
		return Entry{}, err
	}
	s := loc.s
	defer l.release(s)
	sc := newScanner(loc.h.f, loc.pos, loc.end, 2*l.opts.IndexIntervalBytes)
	for n := loc.ordinal; ; n++ {
		pos, raw, e, err := sc.next()
		if err == io.EOF {
			return Entry{}, fmt.Errorf("%w: index %d: %s ends first", ErrNotFound, index, s.path())
		}
		if err != nil {
			return Entry{}, corruptAt(s.path(), pos, err)
		}
		if n < ord {
			continue
		}
		if e.typ == entryCompacted || e.rewritten {
			// Only entries below the latest Raft snapshot are compacted:
			// Raft sends the snapshot instead.
			return Entry{}, fmt.Errorf("%w: index %d: its batch was compacted away", ErrNotFound, index)
		}
		out := Entry{Index: index, Kind: e.kind, Term: e.term}
		if e.typ == entryBatch {
			out.Term = uint64(max(e.epoch, 0))
			out.Data = append([]byte(nil), raw...)
		} else {
			out.Data = append([]byte(nil), e.data...)
		}
		return out, nil
	}
}

// OffsetForTime returns the first offset whose timestamp is >= ts (ms), or
// the high watermark when there is none. Segments are skipped by their max
// timestamp, then the time index skips within the segment, then batches are
// decoded to find the first record. It is never below the log start
// offset.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	off, err := l.offsetForTime(ts)
	if err != nil {
		return 0, err
	}
	return max(off, l.StartOffset()), nil
}

func (l *Log) offsetForTime(ts int64) (int64, error) {
	var hw int64
	loc, err := l.locate(func() (*segment, seek, error) {
		hw = l.hw
		for _, s := range l.segs {
			if s.maxTS >= ts {
				if s.base >= hw {
					return nil, seek{}, nil
				}
				return s, seek{by: byTime, key: ts}, nil
			}
		}
		return nil, seek{}, nil
	})
	if err != nil {
		return 0, err
	}
	if loc.s == nil {
		return hw, nil
	}
	s := loc.s
	defer l.release(s)
	sc := newScanner(loc.h.f, loc.pos, loc.end, 0)
	for {
		pos, raw, e, err := sc.next()
		if err == io.EOF {
			// The segment's max timestamp said a record is here; it must be
			// above the high watermark.
			return hw, nil
		}
		if err != nil {
			return 0, corruptAt(s.path(), pos, err)
		}
		if e.typ != entryBatch || e.maxTS < ts {
			continue
		}
		if e.baseOffset >= hw {
			return hw, nil
		}
		_, recs, err := batch.Decode(raw, 0)
		if errors.Is(err, batch.ErrUnsupported) {
			return e.baseOffset, nil // a codec logd cannot decode: the batch is the finest grain
		}
		if err != nil {
			return 0, corruptAt(s.path(), pos, fmt.Errorf("%w: %v", ErrCorrupt, err))
		}
		for _, r := range recs {
			if r.Timestamp >= ts {
				return min(r.Offset, hw), nil
			}
		}
	}
}

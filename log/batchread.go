package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/logd/logd/internal/batch"
)

// ReadBufferSlack is what a ReadInto buffer needs beyond maxBytes for the
// read to take one pread in the common case: a read starts at the sparse
// index entry at or before the batch asked for (IndexIntervalBytes apart,
// 4 KiB by default), and the entries before that batch are read too.
const ReadBufferSlack = 16 << 10

// minReadAhead is the smallest pread a batch read issues when its buffer
// has room, so that skipping small entries is not one pread per entry.
const minReadAhead = 16 << 10

// batchReader walks the entries of one segment inside one buffer: file
// bytes are pread straight into buf, every entry is verified in place, and
// the batches to return stay contiguous at buf[s:o]. Entries it skips
// (before the offset asked for, or not batches) are overwritten by later
// reads or by the batches after them, so a read costs one copy, kernel to
// buf, and no allocation when buf is large enough.
//
//	buf: [ ... | kept batches | skipped | unwalked | free ]
//	           s              o         p          q      len(buf)
type batchReader struct {
	f        File
	buf      []byte // the whole capacity
	s, o     int    // the batches kept: buf[s:o]
	p, q     int    // bytes read, not yet walked: buf[p:q]; buf[p] is at fpos
	fpos     int64
	end      int64 // the segment's committed size
	maxBytes int
	gap      bool // offset lies in an entry the cleaner compacted away
}

// readBatches returns what Read defines for offset, reading segment seg's
// file f from pos (an entry boundary at or before the entry holding offset) to end,
// in buf's memory when it is large enough (its contents are overwritten) and
// in a buffer it allocates otherwise. Errors are Read's: the scanner's
// semantics, entry for entry.
func readBatches(seg *segment, f File, buf []byte, pos, end, offset, hw int64, maxBytes int) ([]byte, error) {
	r := &batchReader{f: f, buf: buf[:cap(buf)], fpos: pos, end: end, maxBytes: maxBytes}
	for {
		kept := r.o - r.s
		if kept > 0 && maxBytes-kept < batch.HeaderSize {
			return r.out(), nil // no batch is this small: the next cannot fit
		}
		if r.fpos >= r.end {
			if kept == 0 && r.gap {
				return nil, errCompactedGap // the batches after it are in the next segment
			}
			if kept == 0 {
				// Below the high watermark there is always a batch; a
				// concurrent truncation can take it away.
				return nil, fmt.Errorf("%w: %s: no batch holds offset %d", ErrCorrupt, seg.path(), offset)
			}
			return r.out(), nil
		}
		n, err := r.entrySize()
		if err == nil && kept > 0 && r.buf[r.p+magicAt] == batch.Magic {
			// Whatever this batch holds, it is not returned when it would
			// end past maxBytes or starts at the high watermark: decide
			// before reading it.
			if base := int64(binary.BigEndian.Uint64(r.buf[r.p:])); base >= hw || kept+n > maxBytes {
				return r.out(), nil
			}
		}
		var e entryInfo
		if err == nil {
			err = r.fill(n)
		}
		if err == nil {
			e, err = decodeEntry(r.buf[r.p : r.p+n])
		}
		if err != nil {
			if kept > 0 {
				return r.out(), nil
			}
			return nil, corruptAt(seg.path(), r.fpos, err)
		}
		switch {
		case e.typ != entryBatch || e.nextOffset <= offset:
			r.gap = r.gap || e.typ == entryCompacted && e.nextOffset > offset
			r.p += n
			r.fpos += int64(n)
			if kept == 0 {
				r.s, r.o = r.p, r.p
			}
		case e.baseOffset >= hw || (kept > 0 && kept+n > maxBytes):
			return r.out(), nil
		default:
			if r.o != r.p { // entries were skipped since the last batch kept
				copy(r.buf[r.o:], r.buf[r.p:r.p+n])
			}
			r.o += n
			r.p += n
			r.fpos += int64(n)
		}
	}
}

func (r *batchReader) out() []byte { return r.buf[r.s:r.o] }

// entrySize returns the size of the entry at fpos from its prefix, reading
// the prefix if needed; errShort when the segment ends inside the entry.
func (r *batchReader) entrySize() (int, error) {
	if r.end-r.fpos < prefixSize {
		return 0, errShort
	}
	if err := r.fill(prefixSize); err != nil {
		return 0, err
	}
	n, err := entrySize(r.buf[r.p:r.q])
	if err != nil {
		return 0, err
	}
	if int64(n) > r.end-r.fpos {
		return 0, errShort
	}
	return n, nil
}

// fill makes buf[p:q] hold at least need bytes (need <= end-fpos). It reads
// ahead up to what maxBytes of batches and the next entry's prefix take.
func (r *batchReader) fill(need int) error {
	held := r.q - r.p
	if held >= need {
		return nil
	}
	if len(r.buf)-r.p < need {
		r.compact()
		if len(r.buf)-r.p < need {
			r.grow(need)
		}
		held = r.q - r.p
	}
	rest := r.end - (r.fpos + int64(held))
	want := max(need-held, r.maxBytes-(r.o-r.s)-held+prefixSize, minReadAhead)
	want = int(min(int64(want), int64(len(r.buf)-r.q), rest))
	m, err := r.f.ReadAt(r.buf[r.q:r.q+want], r.fpos+int64(held))
	r.q += m
	if err != nil && !(errors.Is(err, io.EOF) && m == want) {
		if errors.Is(err, io.EOF) {
			return errShort // the file is shorter than the caller believed
		}
		return err
	}
	return nil
}

// compact moves the kept batches to the start of buf and the unwalked bytes
// right after them.
func (r *batchReader) compact() {
	if r.s > 0 {
		copy(r.buf, r.buf[r.s:r.o])
		r.o -= r.s
		r.s = 0
	}
	if r.p > r.o {
		copy(r.buf[r.o:], r.buf[r.p:r.q])
		r.q -= r.p - r.o
		r.p = r.o
	}
}

// grow replaces buf (compacted) by one holding need bytes at p, and room
// for maxBytes of batches when the segment has that much left.
func (r *batchReader) grow(need int) {
	left := r.p + int(r.end-r.fpos)
	b := make([]byte, max(r.p+need, min(max(r.maxBytes, minReadAhead), left)))
	copy(b, r.buf[:r.q])
	r.buf = b
}

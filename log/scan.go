package log

import (
	"errors"
	"fmt"
	"io"
)

const defaultScanBuffer = 64 << 10

// scanner reads the entries of a segment file between two positions with
// ReadAt into a bounded buffer: the larger of its chunk size and the largest
// entry met.
type scanner struct {
	f      File
	pos    int64 // file position of the next entry
	end    int64
	buf    []byte
	bufPos int64 // file position of buf[0]
	bufLen int
	chunk  int
}

func newScanner(f File, pos, end int64, chunk int) *scanner {
	if chunk <= 0 {
		chunk = defaultScanBuffer
	}
	return &scanner{f: f, pos: pos, end: end, chunk: chunk, bufPos: pos}
}

// fill makes buf hold at least n bytes from s.pos (or all up to end).
func (s *scanner) fill(n int) error {
	off := int(s.pos - s.bufPos)
	if off >= 0 && off+n <= s.bufLen {
		return nil
	}
	want := int64(max(n, s.chunk))
	want = min(want, s.end-s.pos)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	m, err := s.f.ReadAt(s.buf, s.pos)
	if err != nil && !(errors.Is(err, io.EOF) && m == len(s.buf)) {
		if errors.Is(err, io.EOF) {
			// The file is shorter than the caller believed.
			s.bufPos, s.bufLen = s.pos, m
			return errShort
		}
		return err
	}
	s.bufPos, s.bufLen = s.pos, m
	return nil
}

// next returns the entry at the scanner's position, verified, and moves
// past it. raw aliases the scanner's buffer until the next call. At the end
// it returns io.EOF; when the bytes end inside an entry, errShort.
func (s *scanner) next() (pos int64, raw []byte, e entryInfo, err error) {
	pos = s.pos
	if pos >= s.end {
		return pos, nil, e, io.EOF
	}
	if s.end-pos < prefixSize {
		return pos, nil, e, errShort
	}
	if err := s.fill(prefixSize); err != nil {
		return pos, nil, e, err
	}
	off := int(pos - s.bufPos)
	n, err := entrySize(s.buf[off:s.bufLen])
	if err != nil {
		return pos, nil, e, err
	}
	if int64(n) > s.end-pos {
		return pos, nil, e, errShort
	}
	if err := s.fill(n); err != nil {
		return pos, nil, e, err
	}
	off = int(pos - s.bufPos)
	raw = s.buf[off : off+n]
	e, err = decodeEntry(raw)
	if err != nil {
		return pos, nil, e, err
	}
	s.pos += int64(n)
	return pos, raw, e, nil
}

// corruptAt wraps a scan error with where it happened.
func corruptAt(path string, pos int64, err error) error {
	if errors.Is(err, errShort) {
		return fmt.Errorf("%w: %s at position %d: entry cut short", ErrCorrupt, path, pos)
	}
	if errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%s at position %d: %w", path, pos, err)
	}
	return fmt.Errorf("log: read %s at position %d: %w", path, pos, err)
}

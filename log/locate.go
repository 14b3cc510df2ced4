package log

// The one lookup under every read (Read, Entry, OffsetForTime): lock the
// log, choose the segment, hold its file open, find in its index the entry
// to scan from, unlock. The scan itself runs outside the log's lock.

// seekBy names the key a read looks for inside a segment.
type seekBy uint8

const (
	byOffset  seekBy = iota // a record offset relative to the segment's base
	byOrdinal               // a Raft entry's ordinal within the segment
	byTime                  // a timestamp in ms: the first batch whose max timestamp reaches it
)

// seek is what a read looks for inside the segment it chose.
type seek struct {
	by  seekBy
	key int64 // relative offset, ordinal, or timestamp, as by says
}

// location is where a read starts: the segment, held open until the
// caller's l.release(s), the position of an entry boundary at or before
// the entry sought, that entry's ordinal in the segment (for byOffset and
// byOrdinal seeks; 0 for byTime), and the segment's size when located (the
// scan stops there: bytes appended later are not yet committed to it).
type location struct {
	s       *segment
	h       *handle
	pos     int64
	ordinal uint32
	end     int64
}

// locate runs pick under the log's lock, once the log is known to be open;
// pick reads what it needs of the log's state and returns the segment to
// read and what to seek in it. A nil segment means there is nothing to
// read: locate returns the zero location and pick's error. Otherwise the
// segment is held (the caller releases loc.s) and loc says where to scan
// from: the active segment's index is searched in memory under the lock,
// a closed segment's index files after it is dropped.
func (l *Log) locate(pick func() (*segment, seek, error)) (location, error) {
	l.mu.Lock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.Unlock()
		return location{}, err
	}
	s, k, err := pick()
	if s == nil {
		l.mu.Unlock()
		return location{}, err
	}
	h, err := l.acquireLocked(s)
	if err != nil {
		l.mu.Unlock()
		return location{}, err
	}
	loc := location{s: s, h: h, end: s.size}
	mem := s.mem
	if mem != nil {
		loc.pos, loc.ordinal = k.inMemory(mem)
	}
	l.mu.Unlock()
	if mem == nil {
		if loc.pos, loc.ordinal, err = l.seekClosed(s, h, k); err != nil {
			l.release(s)
			return location{}, err
		}
	}
	return loc, nil
}

// seekClosed is the index lookup of a closed segment (held in h): its
// checked index files, or the memory index that replaced them.
func (l *Log) seekClosed(s *segment, h *handle, k seek) (int64, uint32, error) {
	mem, err := l.ensureIndex(s, h)
	if err != nil {
		return 0, 0, err
	}
	if mem != nil {
		pos, ord := k.inMemory(mem)
		return pos, ord, nil
	}
	return k.inFiles(h)
}

// inMemory looks k up in a memory index.
func (k seek) inMemory(m *memIndex) (int64, uint32) {
	switch k.by {
	case byTime:
		te, _ := m.byTime(k.key)
		return int64(orHeaderT(te).pos), 0
	case byOrdinal:
		ie, _ := m.byOrdinal(uint32(k.key))
		ie = orHeader(ie)
		return int64(ie.pos), ie.ordinal
	default:
		ie, _ := m.byOffset(uint32(k.key))
		ie = orHeader(ie)
		return int64(ie.pos), ie.ordinal
	}
}

// inFiles looks k up in a closed segment's index files, open in h. No
// entry at or before k (or an unreadable file) starts the scan at the
// first entry.
func (k seek) inFiles(h *handle) (int64, uint32, error) {
	if k.by == byTime {
		ts := k.key
		_, b, err := h.times.search(func(b []byte) bool { return decodeTimeEntry(b).maxTS >= ts })
		if err != nil || b == nil {
			return segmentHeaderSize, 0, err
		}
		return int64(decodeTimeEntry(b).pos), 0, nil
	}
	key := uint32(k.key)
	above := func(b []byte) bool { return decodeIndexEntry(b).relOff > key }
	if k.by == byOrdinal {
		above = func(b []byte) bool { return decodeIndexEntry(b).ordinal > key }
	}
	_, b, err := h.off.search(above)
	if err != nil || b == nil {
		return segmentHeaderSize, 0, err
	}
	ie := decodeIndexEntry(b)
	return int64(ie.pos), ie.ordinal, nil
}

// orHeader turns "no index entry" (the zero entry) into the first entry
// after the segment header.
func orHeader(ie indexEntry) indexEntry {
	if ie.pos == 0 {
		ie.pos = segmentHeaderSize
	}
	return ie
}

func orHeaderT(te timeEntry) timeEntry {
	if te.pos == 0 {
		te.pos = segmentHeaderSize
	}
	return te
}

package log

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/logd/logd/internal/batch"
)

// cleanSuffix names a segment being rewritten by the cleaner; it ends in
// tmpSuffix, so Open removes one a crash left.
const cleanSuffix = ".clean" + tmpSuffix

// rewriteFlush is how many bytes the rewrite buffers between writes.
const rewriteFlush = 1 << 20

// rewrite cleans one closed segment against keys (records below end) and
// swaps the result in (compact.go, Crash safety). A segment that would not
// change, or that changed meanwhile (deleted, truncated, replaced), is
// left alone.
func (c *compaction) rewrite(s *segment, keys *keyMap, end int64) error {
	l := c.l
	l.mu.Lock()
	size, next, entries := s.size, s.next, s.entries
	hdr := segmentHeader{baseOffset: s.base, firstIndex: s.firstIndex, created: s.created}
	st, stamped := l.stampOfLocked(s)
	l.mu.Unlock()
	// Tombstones and markers go once the segment's delete horizon has
	// passed.
	c.pastHorizon = stamped && c.opts.Now.UnixMilli()-st.at >= c.opts.DeleteRetention.Milliseconds()
	c.tombstones, c.markers = 0, false
	defer func() {
		if s.next <= end {
			c.held[s.base] = held{tombstones: c.tombstones > 0, markers: c.markers}
		}
	}()
	tmp := segmentPath(l.dir, s.base, logSuffix+cleanSuffix)
	f, err := l.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("log: compact %s: %w", s.path(), err)
	}
	changed, err := c.writeCleaned(s, hdr, f, keys, end)
	if err == nil && changed > 0 {
		err = f.Sync()
	}
	if err != nil || changed == 0 {
		f.Close()
		_ = l.fs.Remove(tmp)
		if err != nil {
			return fmt.Errorf("log: compact %s: %w", s.path(), err)
		}
		return nil
	}
	if err := c.step("written"); err != nil {
		return err
	}
	r, err := scanSegment(f, s.base, l.opts.IndexIntervalBytes)
	if err == nil && (r.err != nil || r.next != next || r.entries != entries || r.size > maxSegmentBytes) {
		err = fmt.Errorf("%w: rewritten segment does not check out (scan: %v)", ErrCorrupt, r.err)
	}
	if err != nil {
		f.Close()
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("log: compact %s: %w", s.path(), err)
	}
	return c.swap(s, hdr, f, tmp, r, size)
}

// writeCleaned writes s cleaned into f: the header and every entry as it
// is, but each batch below end that holds records to remove, which is
// rewritten without them (cleanBatch). It returns how many batches it
// changed.
func (c *compaction) writeCleaned(s *segment, hdr segmentHeader, f File, keys *keyMap, end int64) (changed int64, err error) {
	buf := appendSegmentHeader(nil, hdr)
	var pos int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := f.WriteAt(buf, pos)
		c.l.countWritten(len(buf))
		c.th.wait(len(buf))
		pos += int64(len(buf))
		buf = buf[:0]
		return err
	}
	var werr error
	err = c.eachEntry(s, func(raw []byte, e *entryInfo) bool {
		if e.typ == entryBatch && e.nextOffset <= end {
			var ok bool
			if buf, ok = c.cleanBatch(buf, raw, e, keys); ok {
				changed++
			}
			if c.err != nil {
				return false
			}
		} else {
			buf = append(buf, raw...)
		}
		if len(buf) >= rewriteFlush {
			werr = flush()
		}
		return werr == nil
	})
	err = cmp.Or(err, werr, c.err)
	if err == nil {
		err = flush()
	}
	return changed, err
}

// cleanBatch appends the batch raw (entry e, below the pass's end) as the
// clean leaves it (compact.go, What is kept; compact_txn.go for
// transactions): whole, rewritten with the records kept, empty, or a
// compacted entry. changed: not whole.
func (c *compaction) cleanBatch(dst, raw []byte, e *entryInfo, keys *keyMap) (_ []byte, changed bool) {
	info, recs, err := batch.Decode(raw, 0)
	if err != nil {
		c.txn.unsure = true // of its producer and kind
		return append(dst, raw...), false
	}
	if out, changed, done := c.cleanTxnBatch(dst, raw, e, info, recs); done {
		return out, changed
	}
	kept := recs[:0:0]
	for _, r := range recs {
		if c.keep(r, keys) {
			kept = append(kept, r)
		}
	}
	switch {
	case len(kept) == 0 && (info.ProducerID < 0 && len(recs) > 0 || info.IsTransactional() && c.pastHorizon):
		dst, changed, _ = c.dropAll(dst, e, info, recs)
		return dst, changed
	case len(kept) == len(recs):
		c.txn.wroteData(info)
		return append(dst, raw...), false
	}
	dst, err = batch.Rewrite(dst, info, kept)
	if err != nil {
		c.err = fmt.Errorf("offset %d: %w", e.baseOffset, err)
		return dst, false
	}
	c.txn.wroteData(info)
	c.res.RecordsRemoved += int64(len(recs) - len(kept))
	return dst, true
}

// keep reports whether record r of a batch below the pass's end stays.
func (c *compaction) keep(r batch.Record, keys *keyMap) bool {
	if r.Key == nil {
		return false // refused on a compacted topic; dropped as Kafka does
	}
	if newest, ok := keys.get(r.Key); ok && newest > r.Offset {
		return false // a newer record of the key follows
	}
	if r.Value == nil {
		if c.pastHorizon {
			return false // past its segment's delete horizon
		}
		c.tombstones++
	}
	return true
}

// appendCompacted appends the compacted entry standing for a removed
// batch: it owns the offsets base..next-1 and keeps the batch's epoch.
func appendCompacted(dst []byte, base int64, epoch int32, next int64) []byte {
	var p [8]byte
	binary.BigEndian.PutUint64(p[:], uint64(next))
	return appendOwnEntry(dst, base, epoch, typeCompacted, p[:])
}

// swap renames the rewritten segment (open in f at tmp, scanned as r) over
// s, if s is still the segment of size bytes that was read, and makes it
// the log's; then syncs the directory and writes its index files.
func (c *compaction) swap(s *segment, hdr segmentHeader, f File, tmp string, r scanResult, size int64) error {
	l := c.l
	ns := &segment{dir: l.dir, base: s.base, next: r.next, firstIndex: hdr.firstIndex, entries: r.entries,
		size: r.size, maxTS: r.maxTS, created: hdr.created, mem: &r.ib.idx, h: &handle{f: f}}
	l.mu.Lock()
	i := l.indexOf(s)
	if i < 0 || s.deleted || s.size != size || l.installing || l.closing || l.closed {
		l.mu.Unlock()
		c.txn.unsure = true // the segment's batches are not what the pass wrote
		f.Close()
		_ = l.fs.Remove(tmp)
		return nil
	}
	// The old index files go first: the new segment may have the old one's
	// size, and its footers must never pass for the new segment's. A
	// missing index is rebuilt (readers holding the old files keep them).
	err := l.removeIndexFiles(s.base)
	if err == nil {
		err = l.fs.Rename(tmp, s.path())
	}
	if err != nil {
		l.mu.Unlock()
		f.Close()
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("log: compact %s: %w", s.path(), err)
	}
	l.segs[i] = ns
	s.deleted = true // its readers keep the old file; the last closes it
	if s.refs == 0 {
		s.closeHandle()
	}
	l.tick++
	ns.lruTick = l.tick
	l.evictLocked()
	l.mu.Unlock()
	c.res.Segments++
	c.res.Reclaimed += size - r.size
	if err := c.step("renamed"); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: compact %s: sync directory: %w", s.path(), err)
	}
	if err := c.step("dirsynced"); err != nil {
		return err
	}
	werr := l.writeIndexFiles(ns, ns.mem)
	l.mu.Lock()
	if werr != nil {
		ns.fallback = ns.mem // the next Open rebuilds the files
	}
	ns.idxChecked = true
	ns.mem = nil
	l.mu.Unlock()
	return nil
}

// removeIndexFiles removes the index files of the segment at base.
func (l *Log) removeIndexFiles(base int64) error {
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := l.fs.Remove(segmentPath(l.dir, base, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// step calls the test hook after a step of a swap.
func (c *compaction) step(name string) error {
	if c.opts.Step == nil {
		return nil
	}
	return c.opts.Step(name)
}

package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Installing copied segments (the catch-up of a replica that fell behind
// another's log start) replaces every segment of a log at once:
//
//  1. stage: each new segment is written as "<name>.log.copy", fsynced,
//     verified by a full scan (every CRC, base offsets, Raft indexes
//     continuing from the previous staged segment) and given its index
//     files ("<name>.index.copy", ...); then the directory is fsynced;
//  2. commit: the install marker (installMarker, listing the staged base
//     offsets) is written temp, fsync, rename, directory fsync. This is the
//     commit point: before it the log is the old one and Open removes the
//     staged files; after it the log is the new one;
//  3. finish: for each staged base, its old index files are removed, then
//     its staged index files and segment renamed over the old names (the
//     segment last); every segment or index file of another base is
//     removed; the directory is fsynced and the marker removed.
//
// Open finishes an install whose marker it finds (step 3 is idempotent),
// so a crash at any point leaves either the old log or the new one.

const (
	copySuffix    = ".copy"
	installMarker = "segments.install"
	markerMagic   = "LDIN"
	markerVersion = 1
	copyChunk     = 256 << 10
)

// ErrInstall: an install that cannot proceed (staged segments that do not
// continue each other, a second install at once, an empty install).
var ErrInstall = errors.New("log: install")

// SegmentReader reads one segment file as stored, for copying it to another
// replica (ReadAt, or io.NewSectionReader(r, 0, r.Size()) to stream it). It
// holds the segment: a segment deleted by retention meanwhile stays
// readable. Close releases it.
type SegmentReader struct {
	l    *Log
	s    *segment
	f    File
	info SegmentInfo
}

// OpenSegment opens the segment whose base offset is base for reading its
// bytes, up to its size now (an active segment keeps growing; the reader
// sees the prefix written when it was opened).
func (l *Log) OpenSegment(base int64) (*SegmentReader, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return nil, err
	}
	i, ok := slices.BinarySearchFunc(l.segs, base, func(s *segment, base int64) int { return cmpInt64(s.base, base) })
	if !ok {
		return nil, fmt.Errorf("%w: no segment has base offset %d (the log starts at %d)", ErrNotFound, base, l.start)
	}
	s := l.segs[i]
	h, err := l.acquireLocked(s)
	if err != nil {
		return nil, err
	}
	return &SegmentReader{l: l, s: s, f: h.f, info: s.info()}, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Info describes the segment as it was when opened.
func (r *SegmentReader) Info() SegmentInfo { return r.info }

// Size is the number of bytes the reader serves.
func (r *SegmentReader) Size() int64 { return r.info.Size }

// ReadAt reads the segment's bytes, as io.ReaderAt, up to Size.
func (r *SegmentReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.info.Size {
		return 0, io.EOF
	}
	short := false
	if rest := r.info.Size - off; int64(len(p)) > rest {
		p, short = p[:rest], true
	}
	n, err := r.f.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// Close releases the segment.
func (r *SegmentReader) Close() error {
	if r.s != nil {
		r.l.release(r.s)
		r.s = nil
	}
	return nil
}

// Install stages segments copied from another replica and then replaces
// every segment of the log with them at once (Commit), crash-safely. The
// log stays usable while segments are staged; what is appended meanwhile
// is dropped by Commit. One install at a time.
type Install struct {
	l         *Log
	bases     []int64
	next      int64
	nextIndex uint64
	done      bool
}

// BeginInstall starts an install. Files left by an earlier install that
// did not commit are removed as they are staged again (and on Open).
func (l *Log) BeginInstall() (*Install, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return nil, err
	}
	if l.installing {
		return nil, fmt.Errorf("%w: another install is in progress", ErrInstall)
	}
	l.installing = true
	return &Install{l: l}, nil
}

// End is the offset and Raft index after the last staged segment (0, 0
// before any).
func (in *Install) End() (nextOffset int64, nextIndex uint64) { return in.next, in.nextIndex }

// AddSegment stages the segment whose base offset is base from src (its
// bytes as stored, as a SegmentReader serves them), keeping only the
// entries up to Raft index through: the last segment copied may end with
// entries the install must not take. src is read in bounded chunks. The
// staged segment is fsynced and verified: its header, every entry's CRC
// and base offset, and that it continues the previously staged one (base
// offset and Raft index); it must hold at least one entry. It returns
// what was staged.
func (in *Install) AddSegment(base int64, src io.Reader, through uint64) (_ SegmentInfo, err error) {
	l := in.l
	if in.done {
		return SegmentInfo{}, fmt.Errorf("%w: already committed or aborted", ErrInstall)
	}
	if len(in.bases) > 0 && (base != in.next || base <= in.bases[len(in.bases)-1]) {
		return SegmentInfo{}, fmt.Errorf("%w: segment %d does not continue the staged ones, which end at offset %d", ErrInstall, base, in.next)
	}
	s := &segment{dir: l.dir, base: base}
	name := s.path() + copySuffix
	f, err := l.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return SegmentInfo{}, fmt.Errorf("log: stage %s: %w", name, err)
	}
	defer f.Close()
	defer func() {
		if err != nil {
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				_ = l.fs.Remove(segmentPath(l.dir, base, suf) + copySuffix)
			}
		}
	}()
	size, err := copyToFile(f, src)
	if err == nil {
		l.countWritten(int(size))
		err = timedSync(f, l.opts.Hooks.Fsync)
	}
	if err != nil {
		return SegmentInfo{}, fmt.Errorf("log: stage %s: %w", name, err)
	}
	r, err := scanSegmentUntil(f, base, l.opts.IndexIntervalBytes, through)
	if err != nil {
		return SegmentInfo{}, fmt.Errorf("log: verify staged %s: %w", name, err)
	}
	s.firstIndex = r.header.firstIndex
	switch {
	case r.err != nil && !r.stopped:
		return SegmentInfo{}, fmt.Errorf("log: verify staged %s at position %d: %w", name, r.good, r.err)
	case r.entries == 0:
		return SegmentInfo{}, fmt.Errorf("%w: segment %d holds no entry up to index %d", ErrInstall, base, through)
	case len(in.bases) > 0 && r.header.firstIndex != in.nextIndex:
		return SegmentInfo{}, fmt.Errorf("%w: segment %d starts at index %d, the staged ones end at %d", ErrInstall, base, r.header.firstIndex, in.nextIndex-1)
	}
	if r.stopped {
		if err := f.Truncate(r.good); err != nil {
			return SegmentInfo{}, fmt.Errorf("log: stage %s: %w", name, err)
		}
		if err := timedSync(f, l.opts.Hooks.Fsync); err != nil {
			return SegmentInfo{}, fmt.Errorf("log: stage %s: %w", name, err)
		}
	}
	s.next, s.entries, s.size, s.maxTS, s.created = r.next, r.entries, r.good, r.maxTS, r.header.created
	// Index files are caches: one that cannot be written is rebuilt when
	// the installed log is opened.
	_ = l.writeIndexFilesAs(s, &r.ib.idx, copySuffix)
	in.bases = append(in.bases, base)
	in.next, in.nextIndex = s.next, s.nextIndex()
	return s.info(), nil
}

// copyToFile writes src to f from position 0 in bounded chunks.
func copyToFile(f File, src io.Reader) (int64, error) {
	buf := make([]byte, copyChunk)
	var pos int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if _, werr := f.WriteAt(buf[:n], pos); werr != nil {
				return pos, werr
			}
			pos += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
	}
}

// addEmpty stages a segment holding only its header.
func (in *Install) addEmpty(base int64, firstIndex uint64) error {
	l := in.l
	name := segmentPath(l.dir, base, logSuffix) + copySuffix
	f, err := l.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("log: stage %s: %w", name, err)
	}
	hdr := appendSegmentHeader(nil, segmentHeader{baseOffset: base, firstIndex: firstIndex, created: l.opts.Now()})
	_, err = f.WriteAt(hdr, 0)
	if err == nil {
		l.countWritten(len(hdr))
		err = timedSync(f, l.opts.Hooks.Fsync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: stage %s: %w", name, err)
	}
	in.bases = append(in.bases, base)
	in.next, in.nextIndex = base, firstIndex
	return nil
}

// Abort drops the staged segments; the log is unchanged.
func (in *Install) Abort() error {
	if in.done {
		return nil
	}
	in.done = true
	l := in.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.installing = false
	return in.removeStaged()
}

// removeStaged removes the staged files.
func (in *Install) removeStaged() error {
	l := in.l
	var errs []error
	for _, base := range in.bases {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if err := l.fs.Remove(segmentPath(l.dir, base, suf) + copySuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Commit replaces every segment of the log with the staged ones, durably
// (see the top of this file), and reopens the log on them: the start
// offset is the first staged base, the end the last staged segment's, the
// last of which is the active segment. Readers holding an old segment keep
// reading it. Appends waiting for a sync fail. With ManualHighWatermark
// the high watermark is then the start offset until the owner moves it.
// A failure after the commit point leaves the log refusing appends until
// it is reopened, which finishes the install.
func (in *Install) Commit() (err error) {
	if in.done {
		return fmt.Errorf("%w: already committed or aborted", ErrInstall)
	}
	if len(in.bases) == 0 {
		in.Abort()
		return fmt.Errorf("%w: nothing staged", ErrInstall)
	}
	l := in.l
	l.mu.Lock()
	defer l.mu.Unlock()
	in.done = true
	l.installing = false
	if err := in.commitLocked(); err != nil {
		in.removeStaged()
		return err
	}
	// The marker is in place: from here a failure leaves the log to be
	// reopened, which finishes the install if the marker is durable.
	defer l.failTruncation(&err)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: install: sync directory: %w", err)
	}
	if err := l.finishInstall(in.bases); err != nil {
		return err
	}
	return l.reloadLocked()
}

// commitLocked makes the staged segments durable and writes the marker;
// once the directory is synced after it, the install is committed.
func (in *Install) commitLocked() error {
	l := in.l
	if err := l.checkOpenLocked(); err != nil {
		return err
	}
	if l.failed != nil {
		return l.failed
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: install: sync directory: %w", err)
	}
	if err := l.writeFileAtomic(filepath.Join(l.dir, installMarker), encodeMarker(in.bases)); err != nil {
		return fmt.Errorf("log: install: %w", err)
	}
	return nil
}

// ResetTo drops every segment: the log restarts empty, its next record at
// offset nextOffset and its next entry at Raft index firstIndex, crash-safely
// (a crash leaves the old log or the new one).
func (l *Log) ResetTo(nextOffset int64, firstIndex uint64) error {
	if nextOffset < 0 || firstIndex == 0 {
		return fmt.Errorf("%w: reset to offset %d, index %d", ErrInstall, nextOffset, firstIndex)
	}
	in, err := l.BeginInstall()
	if err != nil {
		return err
	}
	if err := in.addEmpty(nextOffset, firstIndex); err != nil {
		in.Abort()
		return err
	}
	return in.Commit()
}

// reloadLocked replaces the in-memory segments with those in the directory,
// keeping the write sequence (waiters on the old segments learn from gen
// that their bytes are gone).
func (l *Log) reloadLocked() error {
	for _, s := range l.segs {
		s.deleted = true
		s.active = false
		if s.h != nil && s.refs == 0 {
			s.closeHandle()
		}
	}
	seq, hw := l.written.seq, l.hw
	l.segs, l.active = nil, nil
	if err := l.load(); err != nil {
		return fmt.Errorf("log: reopen after install: %w", err)
	}
	l.written.seq = seq
	l.synced = l.written
	l.gen++
	l.repairAt = -1
	newHW := l.hw
	l.hw = hw
	l.setHWLocked(newHW)
	l.durable.Broadcast()
	return nil
}

// recoverInstall finishes an install whose marker is in the directory.
func (l *Log) recoverInstall() error {
	name := filepath.Join(l.dir, installMarker)
	f, err := l.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	size, err := f.Size()
	var b []byte
	if err == nil {
		b = make([]byte, min(size, 1<<30))
		_, err = f.ReadAt(b, 0)
	}
	f.Close()
	if err != nil && !(errors.Is(err, io.EOF) && int64(len(b)) == size) {
		return fmt.Errorf("read %s: %w", name, err)
	}
	bases, err := decodeMarker(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return l.finishInstall(bases)
}

// finishInstall moves the staged segments of bases over the log's and
// removes every other segment, then the marker. Idempotent.
func (l *Log) finishInstall(bases []int64) error {
	for _, base := range bases {
		seg := segmentPath(l.dir, base, logSuffix)
		if _, err := l.fs.Stat(seg + copySuffix); errors.Is(err, fs.ErrNotExist) {
			continue // moved already: the segment goes last
		} else if err != nil {
			return err
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			idx := segmentPath(l.dir, base, suf)
			if err := l.fs.Remove(idx); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := l.fs.Rename(idx+copySuffix, idx); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := l.fs.Rename(seg+copySuffix, seg); err != nil {
			return err
		}
	}
	// The cleaner's clean point and stamps were of the old segments.
	if err := l.fs.Remove(filepath.Join(l.dir, cleanerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		base, _, ok := parseSegmentName(strings.TrimSuffix(name, copySuffix))
		if ok && (strings.HasSuffix(name, copySuffix) || !slices.Contains(bases, base)) {
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return err
			}
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	if err := l.fs.Remove(filepath.Join(l.dir, installMarker)); err != nil {
		return err
	}
	return l.fs.SyncDir(l.dir)
}

// The install marker:
//
//	0  4 magic     "LDIN"
//	4  4 version   1
//	8  4 count     staged segments
//	12 … bases     count base offsets, 8 bytes each, ascending
//	…  4 CRC-32C   of every byte before it
func encodeMarker(bases []int64) []byte {
	b := make([]byte, 0, 16+8*len(bases))
	b = append(b, markerMagic...)
	b = binary.BigEndian.AppendUint32(b, markerVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(bases)))
	for _, base := range bases {
		b = binary.BigEndian.AppendUint64(b, uint64(base))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeMarker(b []byte) ([]int64, error) {
	if len(b) < 16 || string(b[:4]) != markerMagic {
		return nil, fmt.Errorf("%w: not an install marker", ErrCorrupt)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: install marker crc", ErrCorrupt)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != markerVersion {
		return nil, fmt.Errorf("%w: install marker version %d", ErrCorrupt, v)
	}
	n := binary.BigEndian.Uint32(b[8:])
	if n == 0 || int64(len(body)) != 12+8*int64(n) {
		return nil, fmt.Errorf("%w: install marker of %d bytes for %d segments", ErrCorrupt, len(b), n)
	}
	bases := make([]int64, n)
	for i := range bases {
		bases[i] = int64(binary.BigEndian.Uint64(body[12+8*i:]))
		if bases[i] < 0 || (i > 0 && bases[i] <= bases[i-1]) {
			return nil, fmt.Errorf("%w: install marker bases not ascending", ErrCorrupt)
		}
	}
	return bases, nil
}

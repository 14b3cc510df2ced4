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
	"time"
)

// The cleaner's state survives a restart in a side file, so that a
// restarted node does not clean again what is clean, its dirty ratio is
// right, and the tombstone horizon of each cleaned segment holds:
//
//	cleaner (written temp, fsync, rename, directory fsync; compact_state.go)
//	     0    4 magic       "LDCL"
//	     4    4 version     1
//	     8    8 cleaned to  every record below it was cleaned against the
//	                        newer ones up to it
//	    16    4 count       segments stamped
//	    20    … stamps      count times 25 bytes: the segment's base
//	                        offset, its next offset, when it was first
//	                        cleaned (ms since the Unix epoch), and flags:
//	                        1 it held a tombstone when last cleaned, 2 it
//	                        held a transaction marker then, before its
//	                        horizon
//	     …    4 CRC-32C     of every byte before it
//
// A stamp holds for the segment whose base and next offsets it names (a
// segment never changes its offsets: compaction keeps them, and a closed
// segment below the high watermark is never cut). A file that does not
// check out is ignored: the cleaner then cleans once more from the log
// start and stamps segments again, which keeps tombstones longer, never
// shorter.
const (
	cleanerFile    = "cleaner"
	cleanerMagic   = "LDCL"
	cleanerVersion = 1
	cleanerStamp   = 25
)

// stamp is when a segment was first cleaned: a tombstone or a marker in
// it may be removed DeleteRetention after that (Kafka's delete horizon).
type stamp struct {
	base, next int64
	at         int64 // ms since the Unix epoch
	held
}

// held is what a segment held when last cleaned that its horizon removes:
// a tombstone, a transaction marker (kept before its horizon).
type held struct {
	tombstones, markers bool
}

// flags is held's byte in the cleaner file.
func (h held) flags() byte {
	var f byte
	if h.tombstones {
		f |= 1
	}
	if h.markers {
		f |= 2
	}
	return f
}

// stampOfLocked returns the stamp of s, if it was cleaned; l.mu is held.
func (l *Log) stampOfLocked(s *segment) (stamp, bool) {
	i, ok := slices.BinarySearchFunc(l.cleaner.stamps, s.base, func(st stamp, base int64) int {
		return cmpInt64(st.base, base)
	})
	if !ok || l.cleaner.stamps[i].next != s.next {
		return stamp{}, false
	}
	return l.cleaner.stamps[i], true
}

// withStampsLocked returns the stamps of the log's segments now (those of
// segments gone are dropped), with every segment of cleaned (which end at
// or below the clean point) stamped at now if it was not, and its
// flags as the pass found them (cleanedHeld); l.mu is held.
func (l *Log) withStampsLocked(cleaned []*segment, cleanedHeld map[int64]held, now int64) []stamp {
	var out []stamp
	for _, s := range l.segs {
		st, ok := l.stampOfLocked(s)
		if !ok && slices.Contains(cleaned, s) {
			st, ok = stamp{base: s.base, next: s.next, at: now}, true
		}
		if !ok {
			continue
		}
		if h, seen := cleanedHeld[s.base]; seen && slices.Contains(cleaned, s) {
			st.held = h
		}
		out = append(out, st)
	}
	return out
}

// horizonDueLocked reports whether a segment of segs holds a tombstone, or
// a marker, past its delete horizon at now; l.mu is held.
func (l *Log) horizonDueLocked(segs []*segment, now time.Time, retention time.Duration) held {
	var due held
	for _, s := range segs {
		if st, ok := l.stampOfLocked(s); ok && now.UnixMilli()-st.at >= retention.Milliseconds() {
			due.tombstones = due.tombstones || st.tombstones
			due.markers = due.markers || st.markers
		}
	}
	return due
}

// encodeCleaner is the cleaner file's bytes.
func encodeCleaner(cleanedTo int64, stamps []stamp) []byte {
	b := make([]byte, 0, 24+cleanerStamp*len(stamps))
	b = append(b, cleanerMagic...)
	b = binary.BigEndian.AppendUint32(b, cleanerVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(cleanedTo))
	b = binary.BigEndian.AppendUint32(b, uint32(len(stamps)))
	for _, s := range stamps {
		b = binary.BigEndian.AppendUint64(b, uint64(s.base))
		b = binary.BigEndian.AppendUint64(b, uint64(s.next))
		b = binary.BigEndian.AppendUint64(b, uint64(s.at))
		b = append(b, s.flags())
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeCleaner parses the cleaner file; ok is false when it does not
// check out.
func decodeCleaner(b []byte) (cleanedTo int64, stamps []stamp, ok bool) {
	if len(b) < 24 || string(b[:4]) != cleanerMagic || binary.BigEndian.Uint32(b[4:]) != cleanerVersion {
		return 0, nil, false
	}
	n := int(binary.BigEndian.Uint32(b[16:]))
	if n < 0 || n > (len(b)-24)/cleanerStamp || len(b) != 24+cleanerStamp*n ||
		crc32.Checksum(b[:len(b)-4], crcTable) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return 0, nil, false
	}
	cleanedTo = int64(binary.BigEndian.Uint64(b[8:]))
	for i := range n {
		p := b[20+cleanerStamp*i:]
		s := stamp{base: int64(binary.BigEndian.Uint64(p)), next: int64(binary.BigEndian.Uint64(p[8:])),
			at: int64(binary.BigEndian.Uint64(p[16:])), held: held{tombstones: p[24]&1 != 0, markers: p[24]&2 != 0}}
		if s.next <= s.base || p[24] > 3 || (len(stamps) > 0 && s.base < stamps[len(stamps)-1].next) {
			return 0, nil, false
		}
		stamps = append(stamps, s)
	}
	return cleanedTo, stamps, cleanedTo >= 0
}

// writeCleaner makes the cleaner file hold cleanedTo and stamps, durably.
func (l *Log) writeCleaner(cleanedTo int64, stamps []stamp) error {
	if err := l.writeFileAtomic(filepath.Join(l.dir, cleanerFile), encodeCleaner(cleanedTo, stamps)); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: write %s: sync directory: %w", cleanerFile, err)
	}
	return nil
}

// loadCleaner reads the cleaner file, once the segments are loaded: a
// clean point past the log's end (records lost in a crash) is the end.
func (l *Log) loadCleaner() error {
	l.cleaner.cleanedTo, l.cleaner.stamps = 0, nil
	l.cleaner.gen++ // a pass under way (across an install) stamps nothing
	name := filepath.Join(l.dir, cleanerFile)
	f, err := l.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("log: open %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("log: read %s: %w", name, err)
	}
	b := make([]byte, min(size, maxEntrySize))
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return fmt.Errorf("log: read %s: %w", name, err)
	}
	cleanedTo, stamps, ok := decodeCleaner(b)
	if !ok {
		return nil // cleaned again from the start (see the top of the file)
	}
	l.cleaner.cleanedTo = min(cleanedTo, l.written.next)
	l.cleaner.stamps = stamps
	return nil
}

// forgetCleanedLocked drops the cleaner's state, durably, when the log is
// cut below its clean point (below the high watermark, which compaction
// never passes, only a replica's reset does that): records written again
// at those offsets are not clean. l.mu is held.
func (l *Log) forgetCleanedLocked(end int64) error {
	if l.cleaner.cleanedTo <= end {
		return nil
	}
	l.cleaner.cleanedTo, l.cleaner.stamps = 0, nil
	l.cleaner.gen++
	if err := l.fs.Remove(filepath.Join(l.dir, cleanerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: truncate: %w", err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: truncate: sync directory: %w", err)
	}
	return nil
}

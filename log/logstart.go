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
)

// The log start file records a log start offset moved inside a segment
// (AdvanceStart: Kafka's DeleteRecords). Retention moves the start by whole
// segments and needs no file; a start inside the oldest segment must be
// remembered across restarts:
//
//	logstart (20 bytes, written temp, fsync, rename, directory fsync)
//	     0    4 magic      "LDLS"
//	     4    4 version    1
//	     8    8 offset     the log start offset (a floor: never moves back)
//	    16    4 CRC-32C    of bytes 0..15
const (
	logStartFile    = "logstart"
	logStartMagic   = "LDLS"
	logStartVersion = 1
	logStartSize    = 20
)

// AdvanceStart moves the log start offset up to offset: records below it
// are no longer read (a read there is an *OutOfRangeError, as below a
// segment retention deleted) though their bytes stay in the oldest
// segments until retention deletes those whole. The start never moves
// back: an offset at or below it is a no-op. An offset above the high
// watermark is an *OutOfRangeError. The new start is durable (the log
// start file is fsynced) before it is visible and before AdvanceStart
// returns the start now in force.
func (l *Log) AdvanceStart(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkOpenLocked(); err != nil {
		return 0, err
	}
	start := l.startLocked()
	if offset > l.hw || offset < 0 {
		return 0, &OutOfRangeError{Offset: offset, StartOffset: start, HighWatermark: l.hw}
	}
	if offset <= start {
		return start, nil
	}
	if err := l.writeLogStartLocked(offset); err != nil {
		return 0, err
	}
	l.floor = offset
	return l.startLocked(), nil
}

// startLocked is the log start offset: the oldest segment's base, or the
// floor AdvanceStart set inside it, but never above the high watermark (a
// replicated log restarting has its high watermark low until Raft replays
// its entries; nothing is readable meanwhile).
func (l *Log) startLocked() int64 {
	return max(l.start, min(l.floor, l.hw))
}

func (l *Log) writeLogStartLocked(offset int64) error {
	b := make([]byte, 0, logStartSize)
	b = append(b, logStartMagic...)
	b = binary.BigEndian.AppendUint32(b, logStartVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if err := l.writeFileAtomic(filepath.Join(l.dir, logStartFile), b); err != nil {
		return fmt.Errorf("log: advance start to %d: %w", offset, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: advance start to %d: sync directory: %w", offset, err)
	}
	return nil
}

// loadFloor sets the floor from the log start file, once the segments are
// loaded.
func (l *Log) loadFloor() error {
	floor, err := l.loadLogStart()
	if err != nil {
		return err
	}
	l.floor = floor
	if !l.opts.ManualHighWatermark && l.floor > l.hw {
		// Records below the floor were lost in a crash (an fsync policy
		// other than always); new ones will take their offsets and must
		// be readable.
		if err := l.writeLogStartLocked(l.hw); err != nil {
			return err
		}
		l.floor = l.hw
	}
	return nil
}

// loadLogStart reads the log start file (0 when there is none). A file
// that does not check out is an error: guessing a start could serve
// records the user deleted.
func (l *Log) loadLogStart() (int64, error) {
	name := filepath.Join(l.dir, logStartFile)
	f, err := l.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("log: open %s: %w", name, err)
	}
	defer f.Close()
	b := make([]byte, logStartSize+1)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("log: read %s: %w", name, err)
	}
	b = b[:n]
	if n != logStartSize || string(b[:4]) != logStartMagic ||
		crc32.Checksum(b[:16], crcTable) != binary.BigEndian.Uint32(b[16:]) {
		return 0, fmt.Errorf("%w: %s: not a log start file (%d bytes)", ErrCorrupt, name, n)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != logStartVersion {
		return 0, fmt.Errorf("%w: %s: version %d, want %d", ErrCorrupt, name, v, logStartVersion)
	}
	off := int64(binary.BigEndian.Uint64(b[8:]))
	if off < 0 {
		return 0, fmt.Errorf("%w: %s: offset %d", ErrCorrupt, name, off)
	}
	return off, nil
}

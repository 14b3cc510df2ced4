package log

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// fuzzBase is a valid segment: header, batches and a Raft entry.
func fuzzBase(tb testing.TB) (*faultFS, []byte, int64) {
	fs := newFaultFS()
	l := mustOpen(tb, fs, Options{Fsync: FsyncPolicy{Mode: FsyncNever}})
	mustAppend(tb, l, testBatch(2, 10, 5))
	if err := l.AppendEntries(frames([]Entry{{Index: 2, Term: 1, Kind: 3, Data: []byte("conf")}})); err != nil {
		tb.Fatal(err)
	}
	mustAppend(tb, l, testBatch(3, 20, 5))
	next := l.NextOffset()
	l.Close()
	return fs, fs.bytes(segName(0, logSuffix)), next
}

// FuzzRecoverTail appends arbitrary bytes to a valid segment, optionally
// cut first: Open never panics or fails, keeps the valid prefix, and the
// log accepts appends afterwards.
func FuzzRecoverTail(f *testing.F) {
	_, seg, _ := fuzzBase(f)
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("garbage after the last batch"), uint16(0))
	f.Add(seg[segmentHeaderSize:segmentHeaderSize+40], uint16(0))       // a torn copy of a batch
	f.Add(seg[segmentHeaderSize:], uint16(len(seg)-7))                  // batches with the wrong offsets
	f.Add(append(make([]byte, 16), ownMagic, 0, 0, 0, 0, 1), uint16(0)) // a logd entry prefix
	f.Fuzz(func(t *testing.T, tail []byte, cut uint16) {
		fs, seg, next := fuzzBase(t)
		keep := len(seg)
		if cut > 0 {
			keep = int(cut) % (len(seg) + 1)
		}
		fs.setBytes(segName(0, logSuffix), append(seg[:keep:keep], tail...))
		l, err := Open(testDir, Options{FS: fs})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		if keep == len(seg) && l.NextOffset() < next {
			t.Fatalf("valid prefix lost: next offset %d, want >= %d", l.NextOffset(), next)
		}
		readAll(t, l, 0)
		for i := uint64(1); i <= l.LastIndex(); i++ {
			if _, err := l.Entry(i); err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
		info, err := l.Append(testBatch(1, 0, 1))
		if err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if b, err := l.Read(info.BaseOffset, 1); err != nil || len(b) != info.Size() {
			t.Fatalf("read back: %d bytes, %v", len(b), err)
		}
	})
}

// FuzzDecodeEntry: the entry decoder never panics, never claims more bytes
// than it was given, and what it accepts re-encodes to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(testBatch(2, 5, 3))
	f.Add(appendRaftEntry(nil, 7, 3, 1<<40, []byte("config")))
	f.Add(appendSegmentHeader(nil, segmentHeader{baseOffset: 100, firstIndex: 5}))
	f.Add(make([]byte, prefixSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		if e.size > len(b) || e.size < prefixSize {
			t.Fatalf("entry of %d bytes from %d", e.size, len(b))
		}
		if n, err := entrySize(b); err != nil || n != e.size {
			t.Fatalf("entrySize %d %v, decode says %d", n, err, e.size)
		}
		var again []byte
		switch e.typ {
		case entryBatch:
			if _, err := batch.Verify(b); err != nil {
				t.Fatalf("decoded a batch that batch.Verify refuses: %v", err)
			}
			return
		case entryRaft:
			again = appendRaftEntry(nil, e.baseOffset, e.kind, e.term, e.data)
		case entrySegmentHeader:
			again = appendSegmentHeader(nil, e.header)
			binary.BigEndian.PutUint64(again, uint64(e.baseOffset))
		}
		// The epoch field is outside the CRC; compare the rest.
		copy(again[epochAt:epochAt+4], b[epochAt:epochAt+4])
		if !bytes.Equal(again, b[:e.size]) {
			t.Fatalf("re-encoded %x, decoded from %x", again, b[:e.size])
		}
	})
}

// FuzzIndexFooter: the footer parser never panics and checks its fields.
func FuzzIndexFooter(f *testing.F) {
	ft := footer{magic: offsetIndexMagic, count: 2, segSize: 4096, baseOffset: 10, nextOffset: 20, firstIndex: 3, entries: 4, maxTS: 99}
	f.Add(encodeIndexFile(make([]byte, 24), ft))
	f.Add(make([]byte, footerSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < footerSize {
			return
		}
		got, _, err := parseFooter(b[len(b)-footerSize:], offsetIndexMagic)
		if err == nil && (got.nextOffset < got.baseOffset || got.segSize < segmentHeaderSize) {
			t.Fatalf("accepted %+v", got)
		}
	})
}

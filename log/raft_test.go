package log

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// raftEntries returns entries from index first: every third one a Raft
// configuration entry, the rest batches of 2 records.
func raftEntries(first uint64, n int, term uint64) []Entry {
	es := make([]Entry, n)
	for i := range es {
		idx := first + uint64(i)
		if idx%3 == 0 {
			es[i] = Entry{Index: idx, Term: term, Kind: 7, Data: []byte("config " + string(rune('a'+i%26)))}
		} else {
			es[i] = Entry{Index: idx, Term: term, Kind: KindBatch, Data: testBatch(2, int64(idx), 20)}
		}
	}
	return es
}

// checkEntries checks Entry(i) for every stored index against the model
// and that offsets are contiguous across the kinds.
func checkEntries(t *testing.T, l *Log, want []Entry) {
	t.Helper()
	if len(want) == 0 {
		if l.FirstIndex() != 0 || l.LastIndex() != 0 {
			t.Fatalf("empty log: first %d last %d", l.FirstIndex(), l.LastIndex())
		}
		return
	}
	if l.FirstIndex() != want[0].Index || l.LastIndex() != want[len(want)-1].Index {
		t.Fatalf("first %d last %d, want %d %d", l.FirstIndex(), l.LastIndex(), want[0].Index, want[len(want)-1].Index)
	}
	var next int64 = -1
	for _, w := range want {
		e, err := l.Entry(w.Index)
		if err != nil {
			t.Fatalf("entry %d: %v", w.Index, err)
		}
		if e.Index != w.Index || e.Term != w.Term || e.Kind != w.Kind {
			t.Fatalf("entry %d: %+v, want %+v", w.Index, e, w)
		}
		if w.Kind != KindBatch {
			if !bytes.Equal(e.Data, w.Data) {
				t.Fatalf("entry %d: data %q, want %q", w.Index, e.Data, w.Data)
			}
			continue
		}
		info, recs, err := batch.Decode(e.Data, 0)
		if err != nil {
			t.Fatalf("entry %d: %v", w.Index, err)
		}
		if next >= 0 && info.BaseOffset != next {
			t.Fatalf("entry %d: base offset %d, want %d", w.Index, info.BaseOffset, next)
		}
		if info.LeaderEpoch != int32(w.Term) || recs[0].Timestamp != int64(w.Index) {
			t.Fatalf("entry %d: epoch %d, first timestamp %d", w.Index, info.LeaderEpoch, recs[0].Timestamp)
		}
		next = info.NextOffset()
	}
	if _, err := l.Entry(want[len(want)-1].Index + 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry after the last: %v", err)
	}
	if _, err := l.Entry(want[0].Index - 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry before the first: %v", err)
	}
}

func TestRaftMixedKindsKeepOffsetsContiguous(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 600, IndexIntervalBytes: 100, ManualHighWatermark: true}
	l := mustOpen(t, fs, opts)
	want := raftEntries(1, 40, 3)
	for i := 0; i < len(want); i += 5 {
		if err := l.AppendEntries(frames(want[i : i+5])); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	checkEntries(t, l, want)
	l.SetHighWatermark(l.NextOffset())
	recs := readAll(t, l, 0)
	if int64(len(recs)) != l.NextOffset() {
		t.Fatalf("read %d records, next offset %d", len(recs), l.NextOffset())
	}
	l.Close()
	l = mustOpen(t, fs, opts)
	defer l.Close()
	checkEntries(t, l, want)
	if l.HighWatermark() != 0 {
		t.Fatalf("manual high watermark after reopen: %d, want the start offset", l.HighWatermark())
	}
	// Appending after the reopen continues the index.
	if err := l.AppendEntries(frames(raftEntries(42, 1, 3))); err == nil {
		t.Fatal("append with a gap in the index succeeded")
	}
	more := raftEntries(41, 4, 4)
	if err := l.AppendEntries(frames(more)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, append(want, more...))
}

func TestTruncateIndexFrom(t *testing.T) {
	opts := Options{SegmentBytes: 600, IndexIntervalBytes: 100}
	for _, cut := range []uint64{40, 39, 33, 20, 17, 2, 1} {
		fs := newFaultFS()
		l := mustOpen(t, fs, opts)
		want := raftEntries(1, 40, 2)
		for i := 0; i < len(want); i += 4 {
			if err := l.AppendEntries(frames(want[i : i+4])); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.TruncateIndexFrom(cut); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		checkEntries(t, l, want[:cut-1])
		if l.HighWatermark() != l.NextOffset() {
			t.Fatalf("cut %d: hw %d, next %d", cut, l.HighWatermark(), l.NextOffset())
		}
		readAll(t, l, 0)
		// A new leader's suffix, with a new term.
		if cut > 1 {
			repl := raftEntries(cut, 6, 5)
			if err := l.AppendEntries(frames(repl)); err != nil {
				t.Fatalf("cut %d: append: %v", cut, err)
			}
			want = append(want[:cut-1], repl...)
		} else {
			want = nil
		}
		checkEntries(t, l, want)
		l.Close()
		l = mustOpen(t, fs, opts)
		checkEntries(t, l, want)
		readAll(t, l, 0)
		l.Close()
	}
}

func TestEmptyLogStartsAtAnyIndex(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	checkEntries(t, l, nil)
	want := raftEntries(1000, 10, 9)
	if err := l.AppendEntries(frames(want)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, want)
	l.Close()
	l = mustOpen(t, fs, Options{})
	checkEntries(t, l, want)
	// Truncate everything, then start again elsewhere.
	if err := l.TruncateIndexFrom(1000); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, nil)
	if l.NextOffset() != 0 {
		t.Fatalf("next offset %d after full truncation", l.NextOffset())
	}
	want = raftEntries(5000, 4, 10)
	if err := l.AppendEntries(frames(want)); err != nil {
		t.Fatal(err)
	}
	// Append (the Raft-less path) continues the index.
	info := mustAppend(t, l, testBatch(1, 5004, 1))
	if l.LastIndex() != 5004 {
		t.Fatalf("last index %d after Append", l.LastIndex())
	}
	e, err := l.Entry(5004)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := batch.ParseHeader(e.Data); got.BaseOffset != info.BaseOffset || e.Term != 0 {
		t.Fatalf("entry 5004: %+v term %d", got, e.Term)
	}
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	if l.FirstIndex() != 5000 || l.LastIndex() != 5004 {
		t.Fatalf("after reopen: %d..%d", l.FirstIndex(), l.LastIndex())
	}
}

func TestFirstIndexAfterHeadDeletion(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 600}
	l := mustOpen(t, fs, opts)
	want := raftEntries(1, 30, 1)
	for i := range want {
		if err := l.AppendEntries(frames(want[i : i+1])); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	del, err := l.DeleteSegmentsBefore(segs[2].BaseOffset)
	if err != nil || len(del) != 2 {
		t.Fatalf("delete: %v %v", del, err)
	}
	first := segs[2].FirstIndex
	checkEntries(t, l, want[first-1:])
	l.Close()
	l = mustOpen(t, fs, opts)
	defer l.Close()
	checkEntries(t, l, want[first-1:])
	if l.StartOffset() != segs[2].BaseOffset {
		t.Fatalf("start offset %d, want %d", l.StartOffset(), segs[2].BaseOffset)
	}
}

func TestTruncateFrom(t *testing.T) {
	opts := Options{SegmentBytes: 500, IndexIntervalBytes: 100}
	for _, cut := range []int64{0, 1, 2, 7, 20, 21, 39, 40, 100} {
		fs := newFaultFS()
		l := mustOpen(t, fs, opts)
		for i := 0; i < 20; i++ {
			mustAppend(t, l, testBatch(2, int64(2*i), 20))
		}
		if err := l.TruncateFrom(cut); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want := min(cut-cut%2, 40) // batches are not split
		if l.NextOffset() != want || l.HighWatermark() != want {
			t.Fatalf("cut %d: next %d hw %d, want %d", cut, l.NextOffset(), l.HighWatermark(), want)
		}
		if got := readAll(t, l, 0); int64(len(got)) != want {
			t.Fatalf("cut %d: %d records", cut, len(got))
		}
		if _, err := l.Read(want+2, 100); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("cut %d: read past the end: %v", cut, err)
		}
		if info := mustAppend(t, l, testBatch(1, 0, 1)); info.BaseOffset != want {
			t.Fatalf("cut %d: append at %d", cut, info.BaseOffset)
		}
		l.Close()
		l = mustOpen(t, fs, opts)
		if l.NextOffset() != want+1 {
			t.Fatalf("cut %d: after reopen next %d", cut, l.NextOffset())
		}
		readAll(t, l, 0)
		l.Close()
	}
}

// TestHeaderRewriteFailsThenOldFirstIndex: an emptied log's header rewrite
// (a new first index) fails on a full disk; a later append at the old first
// index must still land behind a whole header, so it survives a reopen
// (the file was cut to nothing before the failed write: writing the entry
// at the old header's end left zeros where the header was, and recovery
// then cut the acknowledged entry away as a torn header).
func TestHeaderRewriteFailsThenOldFirstIndex(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{})
	if err := l.AppendEntries(frames(raftEntries(1000, 4, 9))); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateIndexFrom(1000); err != nil {
		t.Fatal(err)
	}
	fs.setSpace(0)
	if err := l.AppendEntries(frames(raftEntries(5000, 2, 10))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	fs.setSpace(-1)
	want := raftEntries(1000, 3, 11)
	if err := l.AppendEntries(frames(want)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, want)
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedBytes != 0 {
		t.Fatalf("recovery cut %d bytes", rep.TruncatedBytes)
	}
	checkEntries(t, l, want)
}

// Large batches are written from their own bytes, the other entries
// copied together; in any mix the entries read back in order, and a write
// that fails part of the way leaves the log as it was.
func TestAppendEntriesLargeAndSmallMixed(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 64 << 20})
	big := func(idx uint64) Entry {
		return Entry{Index: idx, Term: 3, Kind: KindBatch, Data: testBatch(3, int64(idx), directWrite/2)}
	}
	small := raftEntries(1, 6, 3)
	mixed := []Entry{small[0], small[1], big(3), big(4), small[3], small[4], big(7)}
	mixed[4].Index, mixed[5].Index = 5, 6
	mixed[4].Data, mixed[5].Data = testBatch(2, 5, 20), []byte("config x")
	mixed[5].Kind = 7
	if err := l.AppendEntries(frames(mixed)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, mixed)
	size := l.Segments()[len(l.Segments())-1].Size

	// The disk fills in the middle of the second large batch.
	next := []Entry{{Index: 8, Term: 3, Kind: 7, Data: []byte("config y")}, big(9), big(10), {Index: 11, Term: 3, Kind: 7, Data: []byte("z")}}
	fs.setSpace(int64(directWrite * 2))
	if err := l.AppendEntries(frames(next)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a filling disk: %v", err)
	}
	fs.setSpace(-1)
	if got := l.Segments()[len(l.Segments())-1].Size; got != size || l.LastIndex() != 7 {
		t.Fatalf("after the failed append: segment size %d (was %d), last index %d", got, size, l.LastIndex())
	}
	if err := l.AppendEntries(frames(next)); err != nil {
		t.Fatal(err)
	}
	want := append(mixed, next...)
	checkEntries(t, l, want)
	l.Close()
	l = mustOpen(t, fs, Options{SegmentBytes: 64 << 20})
	defer l.Close()
	if rep := l.Recovery(); rep.TruncatedBytes != 0 {
		t.Fatalf("recovery cut %d bytes", rep.TruncatedBytes)
	}
	checkEntries(t, l, want)
}

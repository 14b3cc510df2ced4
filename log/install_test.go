package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// leaderLog is a log of mixed Raft entries over several segments whose
// oldest segments retention deleted, as a leader's log looks when a
// follower must copy it.
func leaderLog(t *testing.T) (*faultFS, *Log, []Entry) {
	t.Helper()
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 400, IndexIntervalBytes: 64})
	es := raftEntries(1, 60, 3)
	for i := 0; i < len(es); i += 4 {
		if err := l.AppendEntries(frames(es[i:min(i+4, len(es))])); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if len(segs) < 6 {
		t.Fatalf("%d segments, want at least 6", len(segs))
	}
	if _, err := l.DeleteSegmentsBefore(segs[2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	first := l.FirstIndex()
	return fs, l, es[first-1:]
}

// followerLog is a log behind the leader's start: its own records at
// offsets the leader trimmed.
func followerLog(t *testing.T, fs *faultFS) *Log {
	t.Helper()
	l := mustOpen(t, fs, Options{SegmentBytes: 400, IndexIntervalBytes: 64})
	if err := l.AppendEntries(frames(raftEntries(1, 12, 3))); err != nil {
		t.Fatal(err)
	}
	return l
}

// copySegments stages src's segments holding entries up to index through
// into dst's install, streaming each with a SegmentReader.
func copySegments(t *testing.T, src *Log, in *Install, through uint64) {
	t.Helper()
	for _, si := range src.Segments() {
		if si.Entries == 0 || si.FirstIndex > through {
			continue
		}
		r, err := src.OpenSegment(si.BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.AddSegment(si.BaseOffset, io.NewSectionReader(r, 0, r.Size()), through)
		r.Close()
		if err != nil {
			t.Fatalf("add segment %d: %v", si.BaseOffset, err)
		}
		if got.BaseOffset != si.BaseOffset || got.FirstIndex != si.FirstIndex || got.LastIndex() != min(si.LastIndex(), through) {
			t.Fatalf("staged %+v from %+v through %d", got, si, through)
		}
	}
}

// offsetAfter is the next offset after the entries up to index through.
func offsetAfter(t *testing.T, l *Log, es []Entry, through uint64) int64 {
	t.Helper()
	for i := through; i >= es[0].Index; i-- {
		e, err := l.Entry(i)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == KindBatch {
			info, err := batch.ParseHeader(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			return info.NextOffset()
		}
	}
	return l.StartOffset()
}

// TestInstallCopiedSegments: a follower's log replaced by the leader's
// segments up to an index holds the leader's entries at the leader's
// offsets and indexes, continues at the next index, and reopens the same.
func TestInstallCopiedSegments(t *testing.T) {
	_, leader, es := leaderLog(t)
	defer leader.Close()
	ffs := newFaultFS()
	f := followerLog(t, ffs)
	through := es[len(es)-1].Index - 5 // inside the leader's active segment or the one before
	in, err := f.BeginInstall()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.BeginInstall(); !errors.Is(err, ErrInstall) {
		t.Fatalf("second install at once: %v", err)
	}
	copySegments(t, leader, in, through)
	wantNext := offsetAfter(t, leader, es, through)
	if next, idx := in.End(); next != wantNext || idx != through+1 {
		t.Fatalf("staged end %d, %d; want %d, %d", next, idx, wantNext, through+1)
	}
	if err := in.Commit(); err != nil {
		t.Fatal(err)
	}
	check := func(f *Log) {
		t.Helper()
		if f.StartOffset() != leader.StartOffset() || f.NextOffset() != wantNext {
			t.Fatalf("follower offsets [%d, %d), want [%d, %d)", f.StartOffset(), f.NextOffset(), leader.StartOffset(), wantNext)
		}
		want := slices.Clone(es[:through-es[0].Index+1])
		checkEntries(t, f, want)
		f.SetHighWatermark(wantNext)
		lr := readRange(t, leader, leader.StartOffset(), wantNext)
		lr = slices.DeleteFunc(lr, func(r batch.Record) bool { return r.Offset >= wantNext })
		fr := readAll(t, f, f.StartOffset())
		if fmt.Sprint(lr) != fmt.Sprint(fr) {
			t.Fatalf("follower records differ from the leader's: %d and %d records", len(lr), len(fr))
		}
	}
	check(f)
	// Raft carries on at the next index, at the leader's offsets.
	if err := f.AppendEntries(frames(raftEntries(through+1, 3, 4))); err != nil {
		t.Fatal(err)
	}
	if err := f.TruncateIndexFrom(through + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, name := range ffs.names() {
		if strings.HasSuffix(name, copySuffix) || strings.HasSuffix(name, installMarker) {
			t.Fatalf("%s left after the install", name)
		}
	}
	f = mustOpen(t, ffs, Options{SegmentBytes: 400, IndexIntervalBytes: 64})
	defer f.Close()
	if rep := f.Recovery(); rep.RebuiltIndexes != 0 {
		t.Fatalf("indexes rebuilt after the install: %+v", rep)
	}
	check(f)
}

// TestInstallRefusesBadSegments: a corrupt byte, a segment that does not
// continue the staged ones, or one with no entry up to the index is
// refused, and the log stays as it was.
func TestInstallRefusesBadSegments(t *testing.T) {
	_, leader, _ := leaderLog(t)
	defer leader.Close()
	segs := leader.Segments()
	raw := func(i int) []byte {
		r, err := leader.OpenSegment(segs[i].BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		add  func(in *Install) error
		want error
	}{
		{"flipped bit", func(in *Install) error {
			b := raw(0)
			b[len(b)-3] ^= 1
			_, err := in.AddSegment(segs[0].BaseOffset, bytes.NewReader(b), ^uint64(0))
			return err
		}, ErrCorrupt},
		{"torn", func(in *Install) error {
			b := raw(0)
			_, err := in.AddSegment(segs[0].BaseOffset, bytes.NewReader(b[:len(b)-1]), ^uint64(0))
			return err
		}, errShort},
		{"wrong name", func(in *Install) error {
			_, err := in.AddSegment(segs[0].BaseOffset+1, bytes.NewReader(raw(0)), ^uint64(0))
			return err
		}, ErrCorrupt},
		{"gap", func(in *Install) error {
			if _, err := in.AddSegment(segs[0].BaseOffset, bytes.NewReader(raw(0)), ^uint64(0)); err != nil {
				return err
			}
			_, err := in.AddSegment(segs[2].BaseOffset, bytes.NewReader(raw(2)), ^uint64(0))
			return err
		}, ErrInstall},
		{"nothing up to the index", func(in *Install) error {
			_, err := in.AddSegment(segs[1].BaseOffset, bytes.NewReader(raw(1)), segs[1].FirstIndex-1)
			return err
		}, ErrInstall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := newFaultFS()
			f := followerLog(t, ffs)
			defer f.Close()
			before := readAll(t, f, 0)
			in, err := f.BeginInstall()
			if err != nil {
				t.Fatal(err)
			}
			wantErrIs(t, tc.add(in), tc.want)
			if err := in.Abort(); err != nil {
				t.Fatal(err)
			}
			if err := in.Commit(); !errors.Is(err, ErrInstall) {
				t.Fatalf("commit after abort: %v", err)
			}
			for _, name := range ffs.names() {
				if strings.HasSuffix(name, copySuffix) {
					t.Fatalf("%s left after abort", name)
				}
			}
			if fmt.Sprint(readAll(t, f, 0)) != fmt.Sprint(before) || f.LastIndex() != 12 {
				t.Fatal("the log changed")
			}
		})
	}
}

// TestResetTo: the log restarts empty at an offset and Raft index, takes
// entries from that index with offsets from that offset, and reopens so.
func TestResetTo(t *testing.T) {
	fs := newFaultFS()
	l := followerLog(t, fs)
	r, err := l.OpenSegment(0)
	if err != nil {
		t.Fatal(err)
	}
	hw := l.HighWatermark()
	if err := l.ResetTo(1000, 500); err != nil {
		t.Fatal(err)
	}
	// A reader holding a dropped segment keeps reading it.
	if n, err := r.ReadAt(make([]byte, 10), 0); n != 10 || err != nil {
		t.Fatalf("read a dropped segment: %d, %v", n, err)
	}
	r.Close()
	if l.StartOffset() != 1000 || l.NextOffset() != 1000 || l.LastIndex() != 0 || l.HighWatermark() != 1000 || hw == 1000 {
		t.Fatalf("after reset: start %d next %d last %d hw %d", l.StartOffset(), l.NextOffset(), l.LastIndex(), l.HighWatermark())
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	es := raftEntries(500, 6, 9)
	if err := l.AppendEntries(frames(es)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, l, es)
	l.Close()
	l = mustOpen(t, fs, Options{})
	defer l.Close()
	checkEntries(t, l, es)
	if l.StartOffset() != 1000 || len(readAll(t, l, 1000)) != 8 {
		t.Fatalf("reopened: start %d", l.StartOffset())
	}
	if err := l.ResetTo(5, 0); !errors.Is(err, ErrInstall) {
		t.Fatalf("reset to index 0: %v", err)
	}
}

// logState is what a crash must leave whole: the old log or the new one.
type logState struct {
	start, next int64
	first, last uint64
	records     string
}

func stateOf(t *testing.T, l *Log) logState {
	t.Helper()
	return logState{l.StartOffset(), l.NextOffset(), l.FirstIndex(), l.LastIndex(), fmt.Sprint(readAll(t, l, l.StartOffset()))}
}

// TestInstallCrashAtEveryStep: a crash before any file system operation of
// an install (staging, commit, finishing) leaves a log that opens as the
// old log or the new one, never a mix, with no staged file left.
func TestInstallCrashAtEveryStep(t *testing.T) {
	_, leader, es := leaderLog(t)
	defer leader.Close()
	through := es[len(es)-1].Index - 2
	opts := Options{SegmentBytes: 400, IndexIntervalBytes: 64}
	run := func(ffs *faultFS, reset bool) {
		f := mustOpen(t, ffs, opts)
		defer f.Close()
		if reset {
			if err := f.ResetTo(777, 300); err != nil {
				t.Fatal(err)
			}
			return
		}
		in, err := f.BeginInstall()
		if err != nil {
			t.Fatal(err)
		}
		copySegments(t, leader, in, through)
		if err := in.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, reset := range []bool{false, true} {
		base := newFaultFS()
		followerLog(t, base).Close()
		l := mustOpen(t, base.clone(), opts)
		oldState := stateOf(t, l)
		l.Close()
		// The new state, and the number of steps to reach it.
		ffs := base.clone()
		steps := 0
		ffs.before = func(string, string) { steps++ }
		run(ffs, reset)
		ffs.before = nil
		l = mustOpen(t, ffs, opts)
		newState := stateOf(t, l)
		l.Close()
		if newState == oldState || steps < 10 {
			t.Fatalf("install changed nothing or took %d steps", steps)
		}
		sawNew := false
		for k := range steps {
			ffs := base.clone()
			var crashed *faultFS
			n := 0
			ffs.before = func(op, name string) {
				if n == k {
					crashed = ffs.crash()
				}
				n++
			}
			run(ffs, reset)
			l, err := Open(testDir, Options{FS: crashed, SegmentBytes: 400, IndexIntervalBytes: 64})
			if err != nil {
				t.Fatalf("reset %v: crash before step %d: open: %v", reset, k, err)
			}
			got := stateOf(t, l)
			l.Close()
			switch got {
			case oldState:
				if sawNew {
					t.Fatalf("reset %v: crash before step %d: old log after a crash that left the new one", reset, k)
				}
			case newState:
				sawNew = true
			default:
				t.Fatalf("reset %v: crash before step %d: %+v, neither the old log %+v nor the new %+v", reset, k, got, oldState, newState)
			}
			for _, name := range crashed.names() {
				if strings.HasSuffix(name, copySuffix) || strings.HasSuffix(name, installMarker) || strings.HasSuffix(name, tmpSuffix) {
					t.Fatalf("reset %v: crash before step %d: %s left", reset, k, name)
				}
			}
		}
		if !sawNew {
			t.Fatalf("reset %v: no crash point left the new log", reset)
		}
	}
}

// TestSegmentReader: it serves the segment's bytes as of its opening, and
// an unknown base is ErrNotFound.
func TestSegmentReader(t *testing.T) {
	_, l, _ := leaderLog(t)
	defer l.Close()
	if _, err := l.OpenSegment(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open unknown segment: %v", err)
	}
	segs := l.Segments()
	act := segs[len(segs)-1]
	r, err := l.OpenSegment(act.BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustAppend(t, l, testBatch(1, 0, 10))
	b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil || int64(len(b)) != act.Size || r.Info().Entries != act.Entries {
		t.Fatalf("read %d bytes (%v), want the %d of the segment when opened", len(b), err, act.Size)
	}
	if n, err := r.ReadAt(make([]byte, 8), act.Size-4); n != 4 || err != io.EOF {
		t.Fatalf("read across the end: %d, %v", n, err)
	}
}

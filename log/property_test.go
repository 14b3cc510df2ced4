package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// model is the log as a list of stored batches.
type model struct {
	batches []modelBatch // kept batches, oldest first
	next    int64
	start   int64
}

type modelBatch struct {
	raw   []byte // as stored
	base  int64
	next  int64
	index uint64
	ts    []int64 // record timestamps
}

// TestPropertyAgainstModel runs random appends, reads, rolls, truncations,
// head deletions, time lookups, reopens and crashes against a model.
// Seeded, so a failure names the seed that reproduces it.
func TestPropertyAgainstModel(t *testing.T) {
	saved := maxOpenSegments
	maxOpenSegments = 3
	defer func() { maxOpenSegments = saved }()
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runModel(t, uint64(seed), 400) })
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x10d))
	opts := Options{SegmentBytes: int64(300 + rng.IntN(2000)), IndexIntervalBytes: 32 + rng.IntN(400)}
	fs := newFaultFS()
	l := mustOpen(t, fs, opts)
	defer func() { l.Close() }()
	m := &model{}
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		n := len(trace)
		t.Fatalf("seed %d step %d (last ops %v): %s", seed, n, trace[max(0, n-8):], fmt.Sprintf(format, args...))
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(100); {
		case op < 50: // append
			n := 1 + rng.IntN(5)
			ts := int64(rng.IntN(10000))
			b := testBatch(n, ts, rng.IntN(150))
			info, err := l.Append(b)
			trace = append(trace, fmt.Sprintf("append(%d)", n))
			if err != nil {
				fail("append: %v", err)
			}
			if info.BaseOffset != m.next {
				fail("append at %d, want %d", info.BaseOffset, m.next)
			}
			mb := modelBatch{raw: b, base: m.next, next: m.next + int64(n), index: l.LastIndex()}
			for i := 0; i < n; i++ {
				mb.ts = append(mb.ts, ts+int64(i))
			}
			if k := len(m.batches); k > 0 && m.batches[k-1].index+1 != mb.index {
				fail("append got index %d after %d", mb.index, m.batches[k-1].index)
			}
			m.batches = append(m.batches, mb)
			m.next = mb.next
		case op < 65: // read
			off := m.start - 2 + int64(rng.IntN(int(m.next-m.start)+5))
			max := 1 + rng.IntN(600)
			trace = append(trace, fmt.Sprintf("read(%d,%d)", off, max))
			got, err := l.Read(off, max)
			switch {
			case off < m.start || off > m.next:
				if !errors.Is(err, ErrOffsetOutOfRange) {
					fail("read %d outside [%d,%d]: %v", off, m.start, m.next, err)
				}
			case off == m.next:
				if err != nil || len(got) != 0 {
					fail("read at the end: %d bytes, %v", len(got), err)
				}
			default:
				if err != nil {
					fail("read %d: %v", off, err)
				}
				k := m.find(off)
				var want []byte
				for _, b := range m.batches[k:] {
					want = append(want, b.raw...)
				}
				if len(got) == 0 || !bytes.HasPrefix(want, got) {
					fail("read %d: %d bytes, not a prefix of the %d expected", off, len(got), len(want))
				}
				if len(got) > max && len(got) != len(m.batches[k].raw) {
					fail("read %d max %d: %d bytes", off, max, len(got))
				}
			}
		case op < 70: // roll
			trace = append(trace, "roll")
			if err := l.Roll(); err != nil {
				fail("roll: %v", err)
			}
		case op < 75: // truncate the tail
			off := m.start + int64(rng.IntN(int(m.next-m.start)+1))
			trace = append(trace, fmt.Sprintf("truncate(%d)", off))
			if err := l.TruncateFrom(off); err != nil {
				fail("truncate %d: %v", off, err)
			}
			if off < m.next {
				k := m.find(off)
				m.batches = m.batches[:k]
				m.next = m.start
				if k > 0 {
					m.next = m.batches[k-1].next
				}
			}
			if l.NextOffset() != m.next {
				fail("truncate %d: next %d, want %d", off, l.NextOffset(), m.next)
			}
			if err := checkActiveIndex(l); err != nil {
				fail("truncate %d: %v", off, err)
			}
		case op < 80: // delete from the head
			off := m.start + int64(rng.IntN(int(m.next-m.start)+1))
			segs := l.Segments()
			want := m.start
			for _, s := range segs[:len(segs)-1] {
				if s.NextOffset <= off {
					want = s.NextOffset
				} else {
					break
				}
			}
			trace = append(trace, fmt.Sprintf("delete(%d)", off))
			if _, err := l.DeleteSegmentsBefore(off); err != nil {
				fail("delete %d: %v", off, err)
			}
			if l.StartOffset() != want {
				fail("delete %d: start %d, want %d", off, l.StartOffset(), want)
			}
			m.start = want
			for len(m.batches) > 0 && m.batches[0].base < want {
				m.batches = m.batches[1:]
			}
		case op < 88: // time lookup
			ts := int64(rng.IntN(10500))
			trace = append(trace, fmt.Sprintf("time(%d)", ts))
			got, err := l.OffsetForTime(ts)
			want := m.next
		search:
			for _, b := range m.batches {
				for i, rts := range b.ts {
					if rts >= ts {
						want = b.base + int64(i)
						break search
					}
				}
			}
			if err != nil || got != want {
				fail("offset for time %d: %d %v, want %d", ts, got, err, want)
			}
		case op < 93: // entry by Raft index
			if len(m.batches) == 0 {
				continue
			}
			b := m.batches[rng.IntN(len(m.batches))]
			trace = append(trace, fmt.Sprintf("entry(%d)", b.index))
			e, err := l.Entry(b.index)
			if err != nil || !bytes.Equal(e.Data, b.raw) {
				fail("entry %d: %v", b.index, err)
			}
		case op < 97: // clean reopen
			trace = append(trace, "reopen")
			if err := l.Close(); err != nil {
				fail("close: %v", err)
			}
			l = mustOpen(t, fs, opts)
		default: // crash: every append returned, so all of it is durable
			trace = append(trace, "crash")
			crashed := fs.crash()
			l.Close()
			fs = crashed
			l = mustOpen(t, fs, opts)
			if rep := l.Recovery(); rep.TruncatedBytes != 0 {
				fail("crash cut %+v", rep)
			}
		}
		if err := checkActiveIndex(l); err != nil {
			fail("%v", err)
		}
		if l.StartOffset() != m.start || l.NextOffset() != m.next || l.HighWatermark() != m.next {
			fail("start %d next %d hw %d, want %d %d", l.StartOffset(), l.NextOffset(), l.HighWatermark(), m.start, m.next)
		}
		if fs.openFiles.Load() > int64(3*(maxOpenSegments+2)) {
			fail("%d files open", fs.openFiles.Load())
		}
	}
	recs := readAll(t, l, m.start)
	if int64(len(recs)) != m.next-m.start {
		fail("final read: %d records, want %d", len(recs), m.next-m.start)
	}
	t.Logf("seed %d: %d segments, offsets [%d, %d), %d rebuilt", seed, len(l.Segments()), m.start, m.next, l.Recovery().RebuiltIndexes)
}

// find returns the index of the batch holding off.
func (m *model) find(off int64) int {
	for i, b := range m.batches {
		if off < b.next {
			return i
		}
	}
	return len(m.batches)
}

// checkActiveIndex compares the active segment's in-memory state with a
// fresh scan of its file: truncation resumes the index build part way.
func checkActiveIndex(l *Log) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.active
	r, err := scanSegment(s.h.f, s.base, l.opts.IndexIntervalBytes)
	if err != nil || r.err != nil {
		return fmt.Errorf("rescan: %v %v", err, r.err)
	}
	if r.good != s.size || r.next != s.next || r.entries != s.entries || r.maxTS != s.maxTS {
		return fmt.Errorf("segment state size %d next %d entries %d maxTS %d, a scan says %d %d %d %d",
			s.size, s.next, s.entries, s.maxTS, r.good, r.next, r.entries, r.maxTS)
	}
	if fmt.Sprint(r.ib.idx) != fmt.Sprint(s.ib.idx) || r.ib.maxTS != s.ib.maxTS || r.ib.lastOffPos != s.ib.lastOffPos ||
		r.ib.lastTimePos != s.ib.lastTimePos || r.ib.lastIndexedT != s.ib.lastIndexedT {
		return fmt.Errorf("in-memory index %+v, a scan builds %+v", *s.ib, *r.ib)
	}
	return nil
}

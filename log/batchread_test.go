package log

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// readByScanner is Read as it was before ReadInto: the scanner reads into
// its own chunk buffer and each batch is appended to a new slice. ReadInto
// must return the same bytes and the same errors.
func readByScanner(l *Log, offset int64, maxBytes int) ([]byte, error) {
	var hw int64
	loc, err := l.locate(func() (*segment, seek, error) {
		hw = l.hw
		if offset < l.start || offset > hw {
			return nil, seek{}, &OutOfRangeError{Offset: offset, StartOffset: l.start, HighWatermark: hw}
		}
		if offset == hw {
			return nil, seek{}, nil
		}
		s := l.segmentForOffset(offset)
		return s, seek{by: byOffset, key: offset - s.base}, nil
	})
	if loc.s == nil {
		return nil, err
	}
	s := loc.s
	defer l.release(s)
	sc := newScanner(loc.h.f, loc.pos, loc.end, min(max(maxBytes, 16<<10), 1<<20))
	var out []byte
	for {
		pos, raw, e, err := sc.next()
		if err == io.EOF {
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: %s: no batch holds offset %d", ErrCorrupt, s.path(), offset)
			}
			return out, nil
		}
		if err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, corruptAt(s.path(), pos, err)
		}
		if e.typ != entryBatch || e.nextOffset <= offset {
			continue
		}
		if e.baseOffset >= hw || (len(out) > 0 && len(out)+len(raw) > maxBytes) {
			return out, nil
		}
		out = append(out, raw...)
	}
}

// mixedLog fills a log with batches of random sizes (1 to 40 records of up
// to 300 bytes) and Raft configuration entries of up to 2 KiB between
// them, in small segments with small index intervals, and sets its high
// watermark somewhere in its last tenth.
func mixedLog(t testing.TB, rng *rand.Rand, fs *faultFS, entries int) (*Log, Options) {
	t.Helper()
	opts := Options{
		SegmentBytes:        int64(2000 + rng.IntN(40000)),
		IndexIntervalBytes:  16 + rng.IntN(2000),
		ManualHighWatermark: true,
		Fsync:               FsyncPolicy{Mode: FsyncNever},
	}
	l := mustOpen(t, fs, opts)
	for i := 0; i < entries; i++ {
		e := Entry{Index: l.LastIndex() + 1, Term: 1}
		if rng.IntN(6) == 0 {
			e.Kind = EntryKind(1 + rng.IntN(5))
			e.Data = bytes.Repeat([]byte{'c'}, rng.IntN(2048))
		} else {
			e.Data = testBatch(1+rng.IntN(40), int64(i), rng.IntN(300))
		}
		if err := l.AppendEntries(frames([]Entry{e})); err != nil {
			t.Fatal(err)
		}
	}
	next := l.NextOffset()
	l.SetHighWatermark(next - int64(rng.IntN(int(next/10)+1)))
	return l, opts
}

// randomDst returns a buffer of one of the shapes callers pass, holding
// garbage: none, too small, exactly maxBytes, maxBytes + ReadBufferSlack,
// or much larger.
func randomDst(rng *rand.Rand, maxBytes int) []byte {
	var n int
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		n = rng.IntN(200)
	case 2:
		n = maxBytes
	case 3:
		n = maxBytes + ReadBufferSlack
	default:
		n = 4*maxBytes + rng.IntN(1<<16)
	}
	return bytes.Repeat([]byte{0xa5}, n)[:rng.IntN(n+1)]
}

// sameRead reads offset both ways and says how they differ, if they do.
func sameRead(l *Log, offset int64, maxBytes int, dst []byte) error {
	want, werr := readByScanner(l, offset, maxBytes)
	got, gerr := l.ReadInto(dst, offset, maxBytes)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		return fmt.Errorf("read(%d, %d) cap %d: error %v, the scanner says %v", offset, maxBytes, cap(dst), gerr, werr)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read(%d, %d) cap %d: %d bytes, the scanner returns %d", offset, maxBytes, cap(dst), len(got), len(want))
	}
	return nil
}

// TestReadIntoMatchesScanner: on logs mixing batches and Raft entries, at
// offsets in and around the readable range, with every buffer shape,
// ReadInto returns what the scanner-based read returned.
func TestReadIntoMatchesScanner(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x4ead))
		fs := newFaultFS()
		l, _ := mixedLog(t, rng, fs, 300)
		if seed%3 == 0 {
			if _, err := l.DeleteSegmentsBefore(l.NextOffset() / 3); err != nil {
				t.Fatal(err)
			}
		}
		start, hw := l.StartOffset(), l.HighWatermark()
		for i := 0; i < 300; i++ {
			off := start - 2 + rng.Int64N(hw-start+5)
			maxBytes := 1 + rng.IntN(1<<rng.IntN(17))
			if err := sameRead(l, off, maxBytes, randomDst(rng, maxBytes)); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		l.Close()
	}
}

// TestReadIntoCorruptMatchesScanner flips bytes in segment files (a batch's
// CRC, a length, a magic, a Raft entry) and reads every offset both ways:
// the same bytes before the damage, the same error naming file and
// position at it.
func TestReadIntoCorruptMatchesScanner(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	damaged := 0
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xbad))
		fs := newFaultFS()
		l, opts := mixedLog(t, rng, fs, 150)
		hw := l.HighWatermark()
		l.Close()
		var logs []string
		for _, n := range fs.names() {
			if strings.HasSuffix(n, logSuffix) {
				logs = append(logs, n)
			}
		}
		name := logs[rng.IntN(len(logs))]
		b := fs.bytes(name)
		for k := 1 + rng.IntN(3); k > 0; k-- {
			b[segmentHeaderSize+rng.IntN(len(b)-segmentHeaderSize)] ^= byte(1 + rng.IntN(255))
		}
		fs.setBytes(name, b)
		opts.FS = fs
		l, err := Open(testDir, opts)
		if err != nil {
			continue // a damaged tail can take the Raft entries Open needs
		}
		l.SetHighWatermark(hw)
		sawErr := false
		for off := l.StartOffset(); off < l.HighWatermark(); off++ {
			maxBytes := 1 + rng.IntN(1<<rng.IntN(15))
			if err := sameRead(l, off, maxBytes, randomDst(rng, maxBytes)); err != nil {
				t.Fatalf("seed %d, %s damaged: %v", seed, name, err)
			}
			if _, err := l.Read(off, maxBytes); err != nil {
				sawErr = true
			}
		}
		if sawErr {
			damaged++
		}
		l.Close()
	}
	if damaged == 0 {
		t.Fatal("no read met the damage: the test checks nothing")
	}
	t.Logf("%d of %d damaged logs failed some read", damaged, seeds)
}

// TestReadIntoUsesDst: with room for maxBytes + ReadBufferSlack, the
// batches are returned in dst's memory, and reading a log through one
// reused buffer allocates next to nothing.
func TestReadIntoUsesDst(t *testing.T) {
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{SegmentBytes: 1 << 20, Fsync: FsyncPolicy{Mode: FsyncNever}})
	defer l.Close()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, testBatch(10, int64(i), 100))
	}
	const maxBytes = 16 << 10
	size := int64(len(testBatch(10, 0, 100)))
	dst := make([]byte, maxBytes+ReadBufferSlack)
	inDst := func(b []byte) bool {
		return cap(b) > 0 && &b[:cap(b)][cap(b)-1] == &dst[cap(dst)-1]
	}
	read := func() {
		for off := int64(0); off < l.HighWatermark(); {
			b, err := l.ReadInto(dst, off, maxBytes)
			if err != nil || len(b) == 0 || len(b) > maxBytes || !inDst(b) {
				t.Fatalf("read %d: %d bytes (in dst: %v), %v", off, len(b), inDst(b), err)
			}
			if err := sameRead(l, off, maxBytes, nil); err != nil {
				t.Fatal(err)
			}
			off += int64(len(b)) / size * 10
		}
	}
	read()
	// Bytes, not allocations: batch.Verify allocates a small header per
	// batch; what must not be allocated is a buffer per read.
	var before, after runtime.MemStats
	reads := 0
	runtime.ReadMemStats(&before)
	for off := int64(0); off < l.HighWatermark(); reads++ {
		b, _ := l.ReadInto(dst, off, maxBytes)
		off += int64(len(b)) / size * 10
	}
	runtime.ReadMemStats(&after)
	if perRead := (after.TotalAlloc - before.TotalAlloc) / uint64(reads); perRead > maxBytes/4 {
		t.Fatalf("%d bytes allocated per read into a reused buffer", perRead)
	}
	// A batch larger than the buffer is still returned whole.
	small := make([]byte, 100)
	b, err := l.ReadInto(small, 5, 1)
	if err != nil || int64(len(b)) != size {
		t.Fatalf("read into a small buffer: %d bytes, %v", len(b), err)
	}
}

// FuzzReadInto: on a log of batches and Raft entries, optionally damaged,
// ReadInto agrees with the scanner-based read for any offset, maxBytes and
// buffer, and never panics.
func FuzzReadInto(f *testing.F) {
	f.Add(uint64(1), uint32(0), byte(0), uint16(3), uint16(500), uint16(0))
	f.Add(uint64(2), uint32(1000), byte(1), uint16(40), uint16(1), uint16(17))
	f.Add(uint64(3), uint32(77), byte(0x80), uint16(0), uint16(9000), uint16(9000))
	f.Fuzz(func(t *testing.T, seed uint64, flip uint32, xor byte, off, maxBytes, dstCap uint16) {
		rng := rand.New(rand.NewPCG(seed, 0xf022))
		fs := newFaultFS()
		l, opts := mixedLog(t, rng, fs, 40)
		hw := l.HighWatermark()
		if xor != 0 {
			l.Close()
			name := segName(0, logSuffix)
			b := fs.bytes(name)
			b[int(flip)%len(b)] ^= xor
			fs.setBytes(name, b)
			opts.FS = fs
			var err error
			if l, err = Open(testDir, opts); err != nil {
				return
			}
			l.SetHighWatermark(hw)
		}
		defer l.Close()
		o := l.StartOffset() - 1 + int64(off)%(l.HighWatermark()-l.StartOffset()+3)
		if err := sameRead(l, o, int(maxBytes)+1, make([]byte, dstCap)); err != nil {
			t.Fatal(err)
		}
	})
}

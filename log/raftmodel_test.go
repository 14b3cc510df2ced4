package log

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// raftModelEntry is one stored Raft entry as the model sees it.
type raftModelEntry struct {
	index      uint64
	term       uint64
	kind       EntryKind
	data       []byte // a batch's bytes as appended (base offset 0), or the opaque data
	base, next int64  // offsets it owns: next == base for an opaque entry
}

// TestRaftPathAgainstModel runs random Raft-path operations -- appends of
// mixed batch and opaque entries, suffix truncations by index (Raft's
// conflicting tails), rolls, reads, reopens and crashes -- against a model,
// checking after each that indexes, terms, kinds, data and offsets agree.
// Every replica must assign the same offsets to the same entries, so an
// offset that drifts from the entries' prefix is a replication bug.
func TestRaftPathAgainstModel(t *testing.T) {
	saved := maxOpenSegments
	maxOpenSegments = 3
	defer func() { maxOpenSegments = saved }()
	seeds := 40
	if testing.Short() {
		seeds = 5
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runRaftModel(t, uint64(seed), 500) })
	}
}

type raftModel struct {
	t       *testing.T
	rng     *rand.Rand
	seed    uint64
	fs      *faultFS
	opts    Options
	l       *Log
	entries []raftModelEntry
	term    uint64
	trace   []string
}

func (m *raftModel) fail(format string, args ...any) {
	m.t.Helper()
	n := len(m.trace)
	m.t.Fatalf("seed %d step %d (last ops %v): %s", m.seed, n, m.trace[max(0, n-10):], fmt.Sprintf(format, args...))
}

func (m *raftModel) next() int64 {
	if n := len(m.entries); n > 0 {
		return m.entries[n-1].next
	}
	return 0
}

func (m *raftModel) lastIndex() uint64 {
	if n := len(m.entries); n > 0 {
		return m.entries[n-1].index
	}
	return 0
}

func runRaftModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x7af7))
	m := &raftModel{t: t, rng: rng, seed: seed, fs: newFaultFS(), term: 1,
		opts: Options{SegmentBytes: int64(200 + rng.IntN(1500)), IndexIntervalBytes: 32 + rng.IntN(300)}}
	m.l = mustOpen(t, m.fs, m.opts)
	defer func() { m.l.Close() }()
	for range steps {
		switch op := rng.IntN(100); {
		case op < 45:
			m.appendEntries()
		case op < 60:
			m.truncate()
		case op < 72:
			m.checkEntry()
		case op < 82:
			m.checkRead()
		case op < 87:
			m.trace = append(m.trace, "roll")
			if err := m.l.Roll(); err != nil {
				m.fail("roll: %v", err)
			}
		case op < 94:
			m.trace = append(m.trace, "reopen")
			if err := m.l.Close(); err != nil {
				m.fail("close: %v", err)
			}
			m.l = mustOpen(t, m.fs, m.opts)
		default: // crash: every append returned, so all of it is durable
			m.trace = append(m.trace, "crash")
			crashed := m.fs.crash()
			m.l.Close()
			m.fs = crashed
			m.l = mustOpen(t, m.fs, m.opts)
		}
		m.checkBounds()
	}
	for _, e := range m.entries {
		m.checkIndex(e)
	}
}

// appendEntries appends 1 to 5 entries at the next index, in the current
// term (which sometimes moves on, as after an election).
func (m *raftModel) appendEntries() {
	if m.rng.IntN(4) == 0 {
		m.term++
	}
	n := 1 + m.rng.IntN(5)
	es := make([]Entry, n)
	add := make([]raftModelEntry, n)
	idx, next := m.lastIndex()+1, m.next()
	for i := range es {
		e := raftModelEntry{index: idx + uint64(i), term: m.term, base: next, next: next}
		if m.rng.IntN(3) == 0 {
			e.kind = EntryKind(2 + m.rng.IntN(4))
			e.data = []byte(fmt.Sprintf("opaque %d/%d", e.term, e.index))
		} else {
			recs := 1 + m.rng.IntN(4)
			e.kind = KindBatch
			e.data = testBatch(recs, int64(e.index), m.rng.IntN(120))
			e.next = next + int64(recs)
		}
		next = e.next
		add[i] = e
		es[i] = Entry{Index: e.index, Term: e.term, Kind: e.kind, Data: bytes.Clone(e.data)}
	}
	m.trace = append(m.trace, fmt.Sprintf("append(%d..%d t%d)", idx, idx+uint64(n)-1, m.term))
	if err := m.l.AppendEntries(frames(es)); err != nil {
		m.fail("append entries %d..: %v", idx, err)
	}
	m.entries = append(m.entries, add...)
}

// truncate cuts a suffix from a random index, as Raft does with a
// conflicting uncommitted tail.
func (m *raftModel) truncate() {
	if len(m.entries) == 0 {
		return
	}
	k := m.rng.IntN(len(m.entries) + 1)
	idx := m.entries[0].index + uint64(k)
	if m.rng.IntN(4) == 0 { // near the end, as conflicts usually are
		k = max(0, len(m.entries)-1-m.rng.IntN(3))
		idx = m.entries[k].index
	}
	m.trace = append(m.trace, fmt.Sprintf("truncate(%d)", idx))
	if err := m.l.TruncateIndexFrom(idx); err != nil {
		m.fail("truncate from %d: %v", idx, err)
	}
	m.entries = m.entries[:k]
	if err := checkActiveIndex(m.l); err != nil {
		m.fail("after truncate from %d: %v", idx, err)
	}
}

func (m *raftModel) checkEntry() {
	if len(m.entries) == 0 {
		return
	}
	e := m.entries[m.rng.IntN(len(m.entries))]
	m.trace = append(m.trace, fmt.Sprintf("entry(%d)", e.index))
	m.checkIndex(e)
}

func (m *raftModel) checkIndex(w raftModelEntry) {
	m.t.Helper()
	e, err := m.l.Entry(w.index)
	if err != nil {
		m.fail("entry %d: %v", w.index, err)
	}
	if e.Index != w.index || e.Term != w.term || e.Kind != w.kind {
		m.fail("entry %d: index %d term %d kind %d, want %d %d %d", w.index, e.Index, e.Term, e.Kind, w.index, w.term, w.kind)
	}
	if w.kind != KindBatch {
		if !bytes.Equal(e.Data, w.data) {
			m.fail("entry %d: data %q, want %q", w.index, e.Data, w.data)
		}
		return
	}
	info, err := batch.ParseHeader(e.Data)
	if err != nil {
		m.fail("entry %d: %v", w.index, err)
	}
	if info.BaseOffset != w.base || info.NextOffset() != w.next {
		m.fail("entry %d: offsets [%d, %d), want [%d, %d)", w.index, info.BaseOffset, info.NextOffset(), w.base, w.next)
	}
	if !bytes.Equal(e.Data[batchCRCStart:], w.data[batchCRCStart:]) {
		m.fail("entry %d: batch bytes differ", w.index)
	}
}

// checkRead reads from a random stored offset and checks that the batches
// come back whole, in order, at their offsets.
func (m *raftModel) checkRead() {
	var batches []raftModelEntry
	for _, e := range m.entries {
		if e.kind == KindBatch {
			batches = append(batches, e)
		}
	}
	if len(batches) == 0 {
		return
	}
	k := m.rng.IntN(len(batches))
	off := batches[k].base + int64(m.rng.IntN(int(batches[k].next-batches[k].base)))
	m.trace = append(m.trace, fmt.Sprintf("read(%d)", off))
	got, err := m.l.Read(off, 1+m.rng.IntN(800))
	if err != nil {
		m.fail("read %d: %v", off, err)
	}
	i := k
	err = batch.Split(got, func(raw []byte, info batch.Info) error {
		if i >= len(batches) {
			return fmt.Errorf("batch at %d past the model's end", info.BaseOffset)
		}
		w := batches[i]
		if info.BaseOffset != w.base || info.NextOffset() != w.next || !bytes.Equal(raw[batchCRCStart:], w.data[batchCRCStart:]) {
			return fmt.Errorf("batch %d: [%d, %d), want [%d, %d) (index %d)", i-k, info.BaseOffset, info.NextOffset(), w.base, w.next, w.index)
		}
		i++
		return nil
	})
	if err != nil || i == k {
		m.fail("read %d: %d batches then %v", off, i-k, err)
	}
}

func (m *raftModel) checkBounds() {
	m.t.Helper()
	if err := checkActiveIndex(m.l); err != nil {
		m.fail("%v", err)
	}
	if got, want := m.l.NextOffset(), m.next(); got != want {
		m.fail("next offset %d, want %d", got, want)
	}
	if got, want := m.l.LastIndex(), m.lastIndex(); got != want {
		m.fail("last index %d, want %d", got, want)
	}
	if len(m.entries) > 0 {
		if got, want := m.l.FirstIndex(), m.entries[0].index; got != want {
			m.fail("first index %d, want %d", got, want)
		}
	}
}

// batchCRCStart is where a batch's CRC starts: the bytes from there on are
// the producer's; the log rewrites the base offset and leader epoch before.
const batchCRCStart = 17

package log

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/logd/logd/internal/batch"
)

// errCompactedGap: a read's offset lies in the compacted entries that end
// a segment; its batches continue in the next one.
var errCompactedGap = errors.New("log: offset in a compacted gap")

const defaultMapEntries = 1 << 20

// Compact cleans the log's cleanable segments (compact.go says which, and
// what is kept) in as many passes as its key map needs, and returns what
// it did. One Compact runs at a time per log.
func (l *Log) Compact(opts CompactOptions) (_ CompactResult, err error) {
	if opts.MapEntries <= 0 {
		opts.MapEntries = defaultMapEntries
	}
	if opts.Now.IsZero() {
		opts.Now = l.opts.Now()
	}
	l.mu.Lock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.Unlock()
		return CompactResult{}, err
	}
	if l.cleaner.running {
		l.mu.Unlock()
		return CompactResult{}, errCompactionRunning
	}
	l.cleaner.running = true
	l.mu.Unlock()
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	c := &compaction{l: l, opts: opts, th: throttle{rate: opts.BytesPerSecond, start: time.Now(), done: opts.Context.Done()},
		aborted: newAbortedSet(opts.Aborted)}
	for {
		var done bool
		if done, err = c.pass(); err != nil || done {
			break
		}
	}
	l.mu.Lock()
	l.cleaner.running = false
	c.res.CleanedTo = max(l.cleaner.cleanedTo, l.start)
	l.mu.Unlock()
	return c.res, err
}

// compaction is one Compact under way.
type compaction struct {
	l    *Log
	opts CompactOptions
	th   throttle
	res  CompactResult
	// err is a batch's rewrite's failure: the segment is left as it is
	// and the pass stops.
	err error
	// pastHorizon: the segment being rewritten is past its delete
	// horizon (its tombstones and markers go).
	pastHorizon bool
	// tombstones counts those the segment being rewritten keeps, markers
	// whether it keeps a marker not yet past its horizon; held has, for
	// each segment the pass cleaned whole, what it kept of both.
	tombstones int
	markers    bool
	held       map[int64]held
	// aborted are the aborted transactions' spans (CompactOptions), txn
	// the pass's transactions (compact_txn.go).
	aborted abortedSet
	txn     txnTrack
	gen     uint64 // the cleaner state's generation as the pass began
}

// pass maps the keys of the dirty segments (as many as the map holds) and
// rewrites the segments up to where the map ends. done: nothing dirty is
// left.
func (c *compaction) pass() (done bool, err error) {
	l := c.l
	l.mu.Lock()
	segs := slices.Clone(l.cleanableLocked(c.opts))
	from := max(l.cleaner.cleanedTo, l.start)
	c.gen = l.cleaner.gen
	l.mu.Unlock()
	first := slices.IndexFunc(segs, func(s *segment) bool { return s.next > from })
	keys := newKeyMap(c.opts.MapEntries)
	end := from
	var due held
	if first < 0 {
		// Nothing dirty: a pass with no key map only removes tombstones
		// and markers past their horizon (every older record of their
		// keys, or of their transaction, is gone), if a segment holds one.
		l.mu.Lock()
		if c.res.Passes == 0 {
			due = l.horizonDueLocked(segs, c.opts.Now, c.opts.DeleteRetention)
		}
		l.mu.Unlock()
		if !due.tombstones && !due.markers {
			return true, nil
		}
	} else if end, err = c.mapKeys(segs[first:], from, keys); err != nil {
		return false, err
	}
	c.held, c.txn = map[int64]held{}, txnTrack{}
	for _, s := range segs {
		if s.base >= end {
			break
		}
		if first < 0 && !due.markers && !c.horizonDue(s) {
			// Nothing to remove there; a marker's batches may be.
			c.txn.unsure = true
			continue
		}
		if err := c.rewrite(s, keys, end); err != nil {
			return false, err
		}
	}
	if err := c.stampPass(segs, end); err != nil {
		return false, err
	}
	c.res.Passes++
	return len(segs) == 0 || end >= segs[len(segs)-1].next, nil
}

// horizonDue reports whether s holds a tombstone or marker past its
// horizon.
func (c *compaction) horizonDue(s *segment) bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	d := c.l.horizonDueLocked([]*segment{s}, c.opts.Now, c.opts.DeleteRetention)
	return d.tombstones || d.markers
}

// stampPass records that the log is clean below end, and stamps the
// segments of segs cleaned for the first time: in the cleaner file first,
// then in memory. A crash before the file is renamed leaves the last
// pass's clean point, and those segments unstamped: they are cleaned and
// stamped again, which only keeps their tombstones longer.
func (c *compaction) stampPass(segs []*segment, end int64) error {
	l := c.l
	l.mu.Lock()
	if l.cleaner.gen != c.gen {
		// An install replaced the segments the pass cleaned.
		l.mu.Unlock()
		return nil
	}
	// segs are the log's segments as the pass began; those rewritten
	// since are new values with the same offsets.
	cur := make([]*segment, 0, len(segs))
	for _, s := range l.segs {
		if slices.ContainsFunc(segs, func(o *segment) bool { return o.base == s.base && o.next == s.next }) {
			cur = append(cur, s)
		}
	}
	cleanedTo := max(l.cleaner.cleanedTo, end)
	cur = slices.DeleteFunc(cur, func(s *segment) bool { return s.next > cleanedTo })
	stamps := l.withStampsLocked(cur, c.held, c.opts.Now.UnixMilli())
	l.mu.Unlock()
	if err := l.writeCleaner(cleanedTo, stamps); err != nil {
		return fmt.Errorf("log: compact: %w", err)
	}
	l.mu.Lock()
	if l.cleaner.gen != c.gen {
		// An install came between: the file was of the old segments.
		err := l.fs.Remove(filepath.Join(l.dir, cleanerFile))
		l.mu.Unlock()
		return err
	}
	l.cleaner.cleanedTo = max(l.cleaner.cleanedTo, cleanedTo)
	l.cleaner.stamps = stamps
	l.mu.Unlock()
	return c.step("stamped")
}

// mapKeys reads the batches of segs from offset from into keys until the
// map is full, and returns the offset up to which it holds every key (a
// batch boundary; at least one batch past from, whatever the map's
// bound).
func (c *compaction) mapKeys(segs []*segment, from int64, keys *keyMap) (int64, error) {
	end := from
	for _, s := range segs {
		full := false
		err := c.eachEntry(s, func(raw []byte, e *entryInfo) bool {
			if e.typ != entryBatch || e.nextOffset <= from {
				end = max(end, e.nextOffset)
				return true
			}
			info, recs, err := batch.Decode(raw, 0)
			if err != nil || info.IsControl() || c.aborted.has(info) {
				// Kept whole by the rewrite, its keys unknown; a
				// marker's record is not a key; an aborted record is
				// removed, and hides no older record of its key.
				end = e.nextOffset
				return true
			}
			if keys.len() > 0 && keys.len()+len(recs) > keys.limit {
				full = true
				return false
			}
			for _, r := range recs {
				if r.Key != nil {
					keys.put(r.Key, r.Offset)
				}
			}
			end = e.nextOffset
			return true
		})
		if err != nil || full {
			return end, err
		}
		end = max(end, s.next)
	}
	return end, nil
}

// eachEntry calls fn for every entry of a closed segment after its
// header, until fn returns false. raw aliases a buffer reused at the next
// call.
func (c *compaction) eachEntry(s *segment, fn func(raw []byte, e *entryInfo) bool) error {
	l := c.l
	l.mu.Lock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if s.deleted {
		l.mu.Unlock()
		return nil
	}
	size := s.size
	h, err := l.acquireLocked(s)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	defer l.release(s)
	sc := newScanner(h.f, segmentHeaderSize, size, 0)
	for {
		pos, raw, e, err := sc.next()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return corruptAt(s.path(), pos, err)
		}
		c.res.Read += int64(len(raw))
		c.th.wait(len(raw))
		if err := c.opts.Context.Err(); err != nil {
			return err
		}
		if !fn(raw, &e) {
			return nil
		}
	}
}

// keyMap maps a 128-bit hash of each key to the newest offset seen, up
// to limit keys (Kafka's dedupe buffer). Two records' keys colliding in
// 128 bits would make the older one's removal wrong; that is as unlikely
// as with Kafka's MD5.
type keyMap struct {
	s1, s2 maphash.Seed
	m      map[[2]uint64]int64
	limit  int
}

func newKeyMap(limit int) *keyMap {
	return &keyMap{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), m: make(map[[2]uint64]int64, min(limit, 1<<16)), limit: limit}
}

func (k *keyMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(k.s1, key), maphash.Bytes(k.s2, key)}
}

func (k *keyMap) len() int { return len(k.m) }

// put records off as key's newest offset (keys are mapped in offset
// order).
func (k *keyMap) put(key []byte, off int64) { k.m[k.hash(key)] = off }

func (k *keyMap) get(key []byte) (int64, bool) {
	off, ok := k.m[k.hash(key)]
	return off, ok
}

// throttle holds the cleaner's I/O to rate bytes a second (0: no bound).
type throttle struct {
	rate  int64
	start time.Time
	n     int64
	done  <-chan struct{} // ends a wait early
}

func (t *throttle) wait(n int) {
	if t.rate <= 0 {
		return
	}
	t.n += int64(n)
	due := time.Duration(float64(t.n) / float64(t.rate) * float64(time.Second))
	if d := due - time.Since(t.start); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-t.done:
			tm.Stop()
		}
	}
}

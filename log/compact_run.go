package log

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
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
func (l *Log) Compact(opts CompactOptions) (CompactResult, error) {
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
	c := &compaction{l: l, opts: opts, th: throttle{rate: opts.BytesPerSecond, start: time.Now(), done: opts.Context.Done()}}
	defer func() {
		l.mu.Lock()
		l.cleaner.running = false
		c.res.CleanedTo = max(l.cleaner.cleanedTo, l.start)
		l.mu.Unlock()
	}()
	for {
		done, err := c.pass()
		if err != nil || done {
			return c.res, err
		}
	}
}

// compaction is one Compact under way.
type compaction struct {
	l    *Log
	opts CompactOptions
	th   throttle
	res  CompactResult
}

// pass maps the keys of the dirty segments (as many as the map holds) and
// rewrites the segments up to where the map ends. done: nothing dirty is
// left.
func (c *compaction) pass() (done bool, err error) {
	l := c.l
	l.mu.Lock()
	segs := slices.Clone(l.cleanableLocked(c.opts))
	from := max(l.cleaner.cleanedTo, l.start)
	l.mu.Unlock()
	first := slices.IndexFunc(segs, func(s *segment) bool { return s.next > from })
	if first < 0 {
		return true, nil
	}
	keys := newKeyMap(c.opts.MapEntries)
	end, err := c.mapKeys(segs[first:], from, keys)
	if err != nil {
		return false, err
	}
	for _, s := range segs {
		if s.base >= end {
			break
		}
		if err := c.rewrite(s, keys, end); err != nil {
			return false, err
		}
	}
	l.mu.Lock()
	l.cleaner.cleanedTo = max(l.cleaner.cleanedTo, end)
	l.mu.Unlock()
	c.res.Passes++
	return end >= segs[len(segs)-1].next, nil
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
			_, recs, err := batch.Decode(raw, 0)
			if err != nil {
				// Kept whole by the rewrite; its keys stay unknown.
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

// keepBatch reports whether a batch below end holds a record to keep.
func (c *compaction) keepBatch(raw []byte, keys *keyMap) bool {
	info, recs, err := batch.Decode(raw, 0)
	if err != nil || info.Attributes&batch.AttrControl != 0 {
		return true
	}
	horizon := c.opts.Now.Add(-c.opts.DeleteRetention).UnixMilli()
	for _, r := range recs {
		if r.Key == nil {
			continue // refused on a compacted topic; dropped as Kafka does
		}
		if newest, ok := keys.get(r.Key); ok && newest > r.Offset {
			continue // a newer record of the key follows
		}
		if r.Value == nil && r.Timestamp < horizon {
			continue // a tombstone past its delete retention
		}
		return true
	}
	return false
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

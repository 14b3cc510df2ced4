package kv

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/batch"
)

// ChunkBytes bounds one read of the log while the index catches up (a
// batch larger than it is read whole).
const ChunkBytes = 1 << 20

// maxResets bounds the rebuilds of one catch-up: retention may move the
// log start past a rebuild's position while it reads.
const maxResets = 3

// Log is what the index reads of a partition's log (*log.Log has it):
// whole batches below the high watermark, from the batch holding offset
// (a compacted gap reads as the next batch kept).
type Log interface {
	StartOffset() int64
	HighWatermark() int64
	ReadInto(dst []byte, offset int64, maxBytes int) ([]byte, error)
}

// Partition is one partition's log and the incarnation of its topic (the
// topic's creation time: a topic deleted and created again under the same
// name is another).
type Partition struct {
	Topic       string
	ID          int32
	Incarnation int64
	Log         Log
}

// Record is a key's newest record, read from the log.
type Record struct {
	Key, Value  []byte
	Headers     []batch.Header
	Offset      int64
	TimestampMs int64
}

// Entry is a key's newest record as the index has it.
type Entry struct {
	Key         []byte
	Offset      int64
	TimestampMs int64
}

// Store is the index of every partition of the node, in a Pebble DB it
// shares with the rest of the node (it does not close it).
type Store struct {
	db       *pebble.DB
	mu       sync.Mutex
	locks    map[string]*sync.Mutex // by partition prefix
	rebuilds atomic.Int64
}

// New returns a Store over db.
func New(db *pebble.DB) *Store {
	return &Store{db: db, locks: map[string]*sync.Mutex{}}
}

// Rebuilds counts the partitions' indexes rebuilt from their log start.
func (s *Store) Rebuilds() int64 { return s.rebuilds.Load() }

// lock takes p's lock and returns its release.
func (s *Store) lock(p Partition) func() {
	k := string(partPrefix(p.Topic, p.ID))
	s.mu.Lock()
	m, ok := s.locks[k]
	if !ok {
		m = &sync.Mutex{}
		s.locks[k] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Get catches p's index up to its high watermark and returns key's newest
// record; ok is false when the key has none: never written, removed by a
// tombstone, or its record is below the log start. The high watermark is
// read once Get holds p's lock: a caller that proved its log current
// (the leader's read barrier) gets every record acknowledged before.
func (s *Store) Get(p Partition, key []byte) (Record, bool, error) {
	unlock := s.lock(p)
	defer unlock()
	prefix := partPrefix(p.Topic, p.ID)
	for attempt := 0; ; attempt++ {
		if _, err := s.catchUpLocked(p, prefix); err != nil {
			return Record{}, false, err
		}
		e, ok, err := s.entry(prefix, key)
		if errors.Is(err, errDamaged) && attempt == 0 {
			if err := s.resetLocked(p, prefix, p.Log.StartOffset()); err != nil {
				return Record{}, false, err
			}
			continue
		}
		if err != nil || !ok || e.Offset < p.Log.StartOffset() {
			return Record{}, false, err
		}
		rec, found, err := ReadRecord(p.Log, e.Offset)
		if err != nil {
			return Record{}, false, err
		}
		if found && bytes.Equal(rec.Key, key) {
			return rec, true, nil
		}
		switch {
		case e.Offset < p.Log.StartOffset():
			return Record{}, false, nil // retention removed it meanwhile
		case attempt == 0 && !found:
			// The cleaner removed it: a newer record of the key is past
			// what the index read; catch up again.
		case attempt <= 1:
			// The entry names another record: damage.
			if err := s.resetLocked(p, prefix, p.Log.StartOffset()); err != nil {
				return Record{}, false, err
			}
		default:
			return Record{}, false, fmt.Errorf("kv: %s-%d: the record of key %q at offset %d is not in the log", p.Topic, p.ID, key, e.Offset)
		}
	}
}

// List catches p's index up and returns at most limit entries whose keys
// start with prefix and sort after after (nil: from the first), in key
// order; more says whether entries are left past the last one returned.
func (s *Store) List(p Partition, prefix, after []byte, limit int) (entries []Entry, more bool, err error) {
	unlock := s.lock(p)
	defer unlock()
	pp := partPrefix(p.Topic, p.ID)
	for attempt := 0; ; attempt++ {
		if _, err := s.catchUpLocked(p, pp); err != nil {
			return nil, false, err
		}
		entries, more, err = s.scan(pp, prefix, after, limit, p.Log.StartOffset())
		if !errors.Is(err, errDamaged) || attempt > 0 {
			return entries, more, err
		}
		if err := s.resetLocked(p, pp, p.Log.StartOffset()); err != nil {
			return nil, false, err
		}
	}
}

// scan reads the entries of the partition with prefix pp, whose keys
// start with prefix and sort after after, skipping those below start.
func (s *Store) scan(pp, prefix, after []byte, limit int, start int64) ([]Entry, bool, error) {
	ep := entriesPrefix(pp)
	lower := append(append([]byte(nil), ep...), prefix...)
	upper := prefixEnd(lower)
	if upper == nil {
		upper = prefixEnd(ep)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	ok := it.First()
	if after != nil {
		ok = it.SeekGE(append(append(append([]byte(nil), ep...), after...), 0))
	}
	var out []Entry
	for ; ok; ok = it.Next() {
		off, ts, err := decodePair("entry", it.Key(), it.Value())
		if err != nil {
			return nil, false, err
		}
		if off < start {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, Entry{Key: bytes.Clone(it.Key()[len(ep):]), Offset: off, TimestampMs: ts})
	}
	return out, false, it.Error()
}

// entry is key's entry in the partition with prefix pp.
func (s *Store) entry(pp, key []byte) (Entry, bool, error) {
	k := entryKey(pp, key)
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	defer closer.Close()
	off, ts, err := decodePair("entry", k, v)
	if err != nil {
		return Entry{}, false, err
	}
	return Entry{Key: key, Offset: off, TimestampMs: ts}, true, nil
}

// Drop removes the index of every partition of topic (the topic was
// deleted).
func (s *Store) Drop(topic string) error {
	p := []byte(keyPrefix + topic + "\x00")
	return s.db.DeleteRange(p, prefixEnd(p), pebble.NoSync)
}

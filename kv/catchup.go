package kv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/batch"
)

// catchUpLocked reads p's log from where the index stopped to the high
// watermark (read now), rebuilding the index first when it must (doc.go).
func (s *Store) catchUpLocked(p Partition, prefix []byte) (state, error) {
	hw := p.Log.HighWatermark()
	st, ok, err := s.loadState(prefix)
	if err != nil && !errors.Is(err, errDamaged) {
		return state{}, err
	}
	if !ok || st.incarnation != p.Incarnation || st.next < p.Log.StartOffset() || st.next > hw {
		st = state{incarnation: p.Incarnation, next: p.Log.StartOffset()}
		if err := s.resetLocked(p, prefix, st.next); err != nil {
			return state{}, err
		}
	}
	var buf []byte
	resets := 0
	for st.next < hw {
		if buf == nil {
			buf = make([]byte, 0, ChunkBytes+64<<10)
		}
		data, err := p.Log.ReadInto(buf, st.next, ChunkBytes)
		if err != nil {
			start := p.Log.StartOffset()
			if start <= st.next || resets == maxResets {
				return state{}, fmt.Errorf("kv: %s-%d: read the log at offset %d: %w", p.Topic, p.ID, st.next, err)
			}
			// Retention moved the log start past the records to read.
			resets++
			st.next = start
			if err := s.resetLocked(p, prefix, start); err != nil {
				return state{}, err
			}
			continue
		}
		if len(data) == 0 {
			break
		}
		if st.next, err = s.apply(p, prefix, st.next, data); err != nil {
			return state{}, err
		}
	}
	return st, nil
}

// apply indexes the records of data (whole batches read from offset next)
// and records the offset read up to, in one Pebble batch.
func (s *Store) apply(p Partition, prefix []byte, next int64, data []byte) (int64, error) {
	b := s.db.NewBatch()
	defer b.Close()
	err := batch.Split(data, func(one []byte, info batch.Info) error {
		if info.NextOffset() <= next {
			return nil
		}
		if info.Attributes&batch.AttrControl == 0 {
			_, recs, err := batch.Decode(one, next)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := indexRecord(b, prefix, r); err != nil {
					return err
				}
			}
		}
		next = info.NextOffset()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("kv: %s-%d: index the log at offset %d: %w", p.Topic, p.ID, next, err)
	}
	if err := b.Set(stateKey(prefix), encodePair(p.Incarnation, next), nil); err != nil {
		return 0, err
	}
	return next, b.Commit(pebble.NoSync)
}

// indexRecord sets r's key to r, or removes it for a tombstone; a record
// without a key changes nothing.
func indexRecord(b *pebble.Batch, prefix []byte, r batch.Record) error {
	if r.Key == nil {
		return nil
	}
	k := entryKey(prefix, r.Key)
	if r.Value == nil {
		return b.Delete(k, nil)
	}
	return b.Set(k, encodePair(r.Offset, r.Timestamp), nil)
}

// loadState reads the partition's state; ok is false when it has none.
func (s *Store) loadState(prefix []byte) (state, bool, error) {
	k := stateKey(prefix)
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, err
	}
	defer closer.Close()
	inc, next, err := decodePair("state", k, v)
	if err != nil {
		return state{}, false, err
	}
	return state{incarnation: inc, next: next}, true, nil
}

// resetLocked removes the partition's index and starts it again at
// offset next, in one Pebble batch.
func (s *Store) resetLocked(p Partition, prefix []byte, next int64) error {
	s.rebuilds.Add(1)
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
		return err
	}
	if err := b.Set(stateKey(prefix), encodePair(p.Incarnation, next), nil); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

// readBufBytes is the size of the buffers ReadRecord reads into: a read
// issues at least a 16 KiB pread (log.minReadAhead), and most batches of a
// key-value topic fit with it.
const readBufBytes = 64 << 10

// readBufs are ReadRecord's buffers: a get read the record's batch into a
// new buffer each time, which made most of a get's allocations and so of
// the garbage collector's work.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, readBufBytes); return &b }}

// ReadRecord reads the record at offset from l; found is false when the
// log holds none there (a compacted gap: the first batch read starts
// past it). The record is a copy: it aliases nothing of the read.
func ReadRecord(l Log, offset int64) (Record, bool, error) {
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	data, err := l.ReadInto((*buf)[:0], offset, 1)
	if err != nil || len(data) == 0 {
		return Record{}, false, err
	}
	var rec Record
	found := false
	err = batch.Split(data, func(one []byte, info batch.Info) error {
		if found || offset < info.BaseOffset || offset >= info.NextOffset() || info.Attributes&batch.AttrControl != 0 {
			return nil
		}
		_, recs, err := batch.Decode(one, offset)
		if err != nil {
			return err
		}
		if len(recs) > 0 && recs[0].Offset == offset {
			r := recs[0]
			rec = Record{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Headers: cloneHeaders(r.Headers), Offset: r.Offset, TimestampMs: r.Timestamp}
			found = true
		}
		return nil
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("kv: read the record at offset %d: %w", offset, err)
	}
	return rec, found, nil
}

// cloneHeaders copies hs, keys and values.
func cloneHeaders(hs []batch.Header) []batch.Header {
	if hs == nil {
		return nil
	}
	out := make([]batch.Header, len(hs))
	for i, h := range hs {
		out[i] = batch.Header{Key: strings.Clone(h.Key), Value: bytes.Clone(h.Value)} // the key may alias the read too
	}
	return out
}

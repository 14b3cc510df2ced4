package share

import "hash/maphash"

// # Per-key ordering
//
// With Config.KeyOrdering a share partition hands out a record only when
// no earlier record of the same key is in flight: acquired by a member,
// or available again after a release, an expired lock or a member's
// leave (its redelivery backoff included). Records of one key are thus
// processed one at a time and in offset order, while records of other
// keys (and keyless records, which are never held back and hold nothing
// back) go on in parallel: the lanes of a sequential convoy. A key is
// free again once its record is done (accepted, archived, or
// dead-lettering).
//
// Keys are not stored: a record's key is learnt from the batch it enters
// the window with (Acquire's Keys), and a window loaded from its encoding
// (a restart, a new leader) or one that turned ordering on has records
// whose keys are unknown until the broker reads them from the log
// (UnknownKeys, SetKeys). A record whose key is unknown holds back every
// later record, so that no order is broken while keys are being learnt.
// Keys are compared by a 64-bit hash: two keys with the same hash share a
// lane, which only holds more back.

// Keys tells the key of a record of the log by its offset: keyed is false
// for a record without a key and for an offset the caller has no record
// of (a compaction gap, a control batch).
type Keys func(offset int64) (hash uint64, keyed bool)

// keyOf is a record's key as the window knows it.
type keyOf struct {
	hash  uint64
	state keyState
}

type keyState uint8

const (
	keyUnknown keyState = iota
	keyNone
	keyed
)

var keySeed = maphash.MakeSeed()

// KeyHash is the hash Keys answers for key.
func KeyHash(key []byte) uint64 { return maphash.Bytes(keySeed, key) }

func learn(keys Keys, o int64) keyOf {
	if keys == nil {
		return keyOf{}
	}
	if h, ok := keys(o); ok {
		return keyOf{hash: h, state: keyed}
	}
	return keyOf{state: keyNone}
}

// UnknownKeys is the range [from, to) of the window's offsets whose
// records are not done and have keys the window does not know, ok false
// when there is none or KeyOrdering is off: the broker reads the range
// from the log and calls SetKeys before it acquires.
func (p *Partition) UnknownKeys() (from, to int64, ok bool) {
	if !p.cfg.KeyOrdering {
		return 0, 0, false
	}
	first, last := -1, -1
	for i := range p.recs {
		if r := &p.recs[i]; r.key.state == keyUnknown && !r.finished() {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	return p.start + int64(first), p.start + int64(last) + 1, true
}

// SetKeys records the keys of the window's offsets in [from, to) whose
// keys are unknown.
func (p *Partition) SetKeys(from, to int64, keys Keys) {
	from, to = max(from, p.start), min(to, p.End())
	for o := from; o < to; o++ {
		if r := &p.recs[o-p.start]; r.key.state == keyUnknown {
			r.key = learn(keys, o)
		}
	}
}

// finished: the record holds no key back (accepted, archived, or on its
// way to the dead-letter topic).
func (r *record) finished() bool { return r.state.done() || r.state == DeadLettering }

// lanes tracks, during one pass over the window in offset order, the keys
// an earlier record holds.
type lanes struct {
	on      bool
	held    map[uint64]bool
	blocked bool // an earlier record's key is unknown: everything waits
}

func (p *Partition) lanes() lanes { return lanes{on: p.cfg.KeyOrdering} }

// free reports whether r may be handed out: ordering is off, or no
// earlier record holds its key.
func (l *lanes) free(r *record) bool {
	if !l.on {
		return true
	}
	switch {
	case l.blocked:
		return false
	case r.key.state == keyUnknown:
		return false
	case r.key.state == keyed:
		return !l.held[r.key.hash]
	}
	return true
}

// pass notes r, passed over or just acquired, as holding its key for the
// records after it when it is still in flight.
func (l *lanes) pass(r *record) {
	if !l.on || r.finished() {
		return
	}
	switch r.key.state {
	case keyUnknown:
		l.blocked = true
	case keyed:
		if l.held == nil {
			l.held = map[uint64]bool{}
		}
		l.held[r.key.hash] = true
	}
}

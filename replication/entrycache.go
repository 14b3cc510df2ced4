package replication

import (
	"container/list"
	"sync"

	"github.com/hashicorp/raft"
)

// DefaultEntryCacheBytes is the budget of a node's entry cache: the
// entries its partition logs stored last, kept in memory for Raft's reads
// of them (below). A partition's leader pipelines a few MiB at a time, so a
// few dozen MiB hold what every follower of a handful of busy partitions
// is about to be sent.
const DefaultEntryCacheBytes = 32 << 20

// cachedEntryOverhead is what an entry costs the budget beyond its data.
const cachedEntryOverhead = 96

// entryCache keeps the entries a node's partition logs stored last, under
// one byte budget shared by every replica of the node (the oldest insert
// goes first). Raft reads each entry back soon after storing it: a leader
// once per follower it sends the entry to (and the entry before, for its
// term), a follower once to apply it. Read from the segment file, each of
// those reads is a pread, a scan from the nearest index point, a CRC check
// and a copy; from the cache it is a map lookup. An entry is cached as it
// was given to StoreLogs, after the log stored it, so the cache holds
// exactly the stored bytes (the log writes a batch's offsets into the very
// bytes it was given).
type entryCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	fifo  list.List // of *cachedEntry, oldest first
}

func newEntryCache(maxBytes int64) *entryCache {
	return &entryCache{max: maxBytes}
}

// cachedEntry is one entry of one log.
type cachedEntry struct {
	owner *storeCache
	log   raft.Log
	size  int64
	elem  *list.Element
}

// storeCache is one log's part of an entryCache.
type storeCache struct {
	c       *entryCache
	entries map[uint64]*cachedEntry // guarded by c.mu
}

func (c *entryCache) store() *storeCache { return &storeCache{c: c} }

// put caches ls, stored in the log in this order.
func (s *storeCache) put(ls []*raft.Log) {
	if s == nil {
		return
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range ls {
		if old := s.entries[l.Index]; old != nil {
			c.remove(old)
		}
		size := int64(len(l.Data)) + cachedEntryOverhead
		if size > c.max {
			continue
		}
		if s.entries == nil {
			s.entries = map[uint64]*cachedEntry{}
		}
		e := &cachedEntry{owner: s, log: raft.Log{Index: l.Index, Term: l.Term, Type: l.Type, Data: l.Data}, size: size}
		e.elem = c.fifo.PushBack(e)
		s.entries[l.Index] = e
		c.bytes += size
	}
	for c.bytes > c.max {
		c.remove(c.fifo.Front().Value.(*cachedEntry))
	}
}

// get returns the cached entry at index.
func (s *storeCache) get(index uint64) (raft.Log, bool) {
	if s == nil {
		return raft.Log{}, false
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	e := s.entries[index]
	if e == nil {
		return raft.Log{}, false
	}
	return e.log, true
}

// truncateFrom forgets the entries at index from and above.
func (s *storeCache) truncateFrom(from uint64) {
	if s == nil {
		return
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for i, e := range s.entries {
		if i >= from {
			s.c.remove(e)
		}
	}
}

// drop forgets every entry of the log.
func (s *storeCache) drop() { s.truncateFrom(0) }

// remove takes e out of the cache (under c.mu).
func (c *entryCache) remove(e *cachedEntry) {
	c.fifo.Remove(e.elem)
	delete(e.owner.entries, e.log.Index)
	if len(e.owner.entries) == 0 {
		e.owner.entries = nil // an idle log keeps no map
	}
	c.bytes -= e.size
}

// cachedBytes is what the cache holds now (for tests).
func (c *entryCache) cachedBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

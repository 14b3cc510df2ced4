package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// StableStore is one Raft group's raft.StableStore (current term, vote) in
// the node's shared Pebble DB, under the key prefix "raft/<group>/". Every
// write is synced: Raft relies on a vote surviving a crash.
type StableStore struct {
	db     *pebble.DB
	prefix []byte

	mu     sync.Mutex
	synced []stableEntry // what Set wrote and synced (Raft uses three keys)
}

// stableEntry is a key and the value Set synced under it.
type stableEntry struct{ key, val []byte }

var _ raft.StableStore = (*StableStore)(nil)

// NewStableStore returns the stable store of group in db.
func NewStableStore(db *pebble.DB, group string) *StableStore {
	return &StableStore{db: db, prefix: []byte("raft/" + group + "/")}
}

func (s *StableStore) key(k []byte) []byte {
	return append(append(make([]byte, 0, len(s.prefix)+len(k)), s.prefix...), k...)
}

// Set stores val under key, synced, unless this store wrote and synced
// val under key already: a replica's Raft starts (raft.NewRaft, at every
// wake of a sleeping group) by writing back the term it just read, and a
// vote often names the candidate of the previous one. Only what this
// store synced itself is skipped: the first Set after a restart still
// writes what the node read back. Pebble's Open does flush what it
// replays from its WAL (a value written but not synced before a kill -9
// is durable once the DB is open again), but the skip does not rest on
// that, and costs no read.
func (s *StableStore) Set(key, val []byte) error {
	s.mu.Lock() // held across the write: the remembered value is the stored one
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.synced, func(e stableEntry) bool { return bytes.Equal(e.key, key) })
	if i >= 0 && bytes.Equal(s.synced[i].val, val) {
		return nil
	}
	if err := s.db.Set(s.key(key), val, pebble.Sync); err != nil {
		if i >= 0 {
			s.synced = slices.Delete(s.synced, i, i+1) // unknown now
		}
		return fmt.Errorf("replication: stable store set %q: %w", key, err)
	}
	v := bytes.Clone(val)
	if i >= 0 {
		s.synced[i].val = v
	} else {
		s.synced = append(s.synced, stableEntry{key: bytes.Clone(key), val: v})
	}
	return nil
}

// Get returns the value of key, or ErrKeyNotFound.
func (s *StableStore) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(s.key(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("replication: stable store get %q: %w", key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// SetUint64 stores val (8 bytes, big-endian) under key, synced.
func (s *StableStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value of key, or 0 and no error when it is missing
// (raft.StableStore's contract).
func (s *StableStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if errors.Is(err, ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("replication: stable store key %q: %d bytes, want a uint64's 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Drop deletes every key of the group (when its replica leaves the node).
func (s *StableStore) Drop() error {
	end := append([]byte(nil), s.prefix...)
	end[len(end)-1]++ // '/' + 1: the first key after the prefix
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced = nil
	if err := s.db.DeleteRange(s.prefix, end, pebble.Sync); err != nil {
		return fmt.Errorf("replication: stable store drop %q: %w", s.prefix, err)
	}
	return nil
}

package replication

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// PebbleLogStore is a raft.LogStore in the node's Pebble DB, for the
// metadata group: its commands are small, carry no records, and its log is
// compacted for real after a snapshot (the segment log cannot do that: it
// trims by offset and only rolls segments that own offsets).
//
// Keys and values:
//
//	raft/<group>/log/<index: 8 bytes big-endian>
//	  0  1 version      1
//	  1  8 term         big-endian
//	  9  1 type         raft.LogType
//	 10  … data length  uvarint, then data
//	   … extensions     uvarint length, then bytes
//
// Writes are one synced Pebble batch per StoreLogs.
type PebbleLogStore struct {
	db     *pebble.DB
	prefix []byte // raft/<group>/log/
}

var _ raft.LogStore = (*PebbleLogStore)(nil)

const pebbleLogVersion = 1

// NewPebbleLogStore returns group's log store in db.
func NewPebbleLogStore(db *pebble.DB, group string) *PebbleLogStore {
	return &PebbleLogStore{db: db, prefix: []byte("raft/" + group + "/log/")}
}

func (s *PebbleLogStore) key(index uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), s.prefix...), index)
}

func (s *PebbleLogStore) upper() []byte {
	end := append([]byte(nil), s.prefix...)
	end[len(end)-1]++ // '/' + 1
	return end
}

// FirstIndex is the first stored index, 0 when empty.
func (s *PebbleLogStore) FirstIndex() (uint64, error) { return s.edge(true) }

// LastIndex is the last stored index, 0 when empty.
func (s *PebbleLogStore) LastIndex() (uint64, error) { return s.edge(false) }

func (s *PebbleLogStore) edge(first bool) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.prefix, UpperBound: s.upper()})
	if err != nil {
		return 0, fmt.Errorf("replication: log store: %w", err)
	}
	defer it.Close()
	ok := it.First()
	if !first {
		ok = it.Last()
	}
	if !ok {
		return 0, it.Error()
	}
	k := it.Key()
	if len(k) != len(s.prefix)+8 {
		return 0, fmt.Errorf("replication: log store: malformed key %q", k)
	}
	return binary.BigEndian.Uint64(k[len(s.prefix):]), nil
}

// GetLog reads the entry at index, or returns raft.ErrLogNotFound.
func (s *PebbleLogStore) GetLog(index uint64, out *raft.Log) error {
	v, closer, err := s.db.Get(s.key(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("replication: log store get %d: %w", index, err)
	}
	defer closer.Close()
	l, err := decodePebbleLog(v)
	if err != nil {
		return fmt.Errorf("replication: log store get %d: %w", index, err)
	}
	l.Index = index
	*out = l
	return nil
}

// StoreLog stores one entry.
func (s *PebbleLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one synced batch.
func (s *PebbleLogStore) StoreLogs(ls []*raft.Log) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, l := range ls {
		if err := b.Set(s.key(l.Index), encodePebbleLog(l), nil); err != nil {
			return fmt.Errorf("replication: log store: %w", err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("replication: log store: %w", err)
	}
	return nil
}

// DeleteRange deletes [min, max], synced.
func (s *PebbleLogStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	end := s.upper()
	if max < ^uint64(0) {
		end = s.key(max + 1)
	}
	if err := s.db.DeleteRange(s.key(min), end, pebble.Sync); err != nil {
		return fmt.Errorf("replication: log store delete [%d, %d]: %w", min, max, err)
	}
	return nil
}

func encodePebbleLog(l *raft.Log) []byte {
	b := make([]byte, 0, 10+2*binary.MaxVarintLen64+len(l.Data)+len(l.Extensions))
	b = append(b, pebbleLogVersion)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

var errPebbleLogCorrupt = errors.New("replication: corrupt log entry")

func decodePebbleLog(v []byte) (raft.Log, error) {
	if len(v) < 10 || v[0] != pebbleLogVersion {
		return raft.Log{}, fmt.Errorf("%w: %d bytes, version %v", errPebbleLogCorrupt, len(v), v[:min(1, len(v))])
	}
	l := raft.Log{Term: binary.BigEndian.Uint64(v[1:]), Type: raft.LogType(v[9])}
	rest := v[10:]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		f := append([]byte(nil), rest[k:k+int(n)]...)
		rest = rest[k+int(n):]
		return f, true
	}
	var ok bool
	if l.Data, ok = field(); !ok {
		return raft.Log{}, fmt.Errorf("%w: data length", errPebbleLogCorrupt)
	}
	if l.Extensions, ok = field(); !ok || len(rest) != 0 {
		return raft.Log{}, fmt.Errorf("%w: extensions", errPebbleLogCorrupt)
	}
	if len(l.Extensions) == 0 {
		l.Extensions = nil
	}
	return l, nil
}

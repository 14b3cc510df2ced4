package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/routing"
)

// Limits on what a commit may carry.
const (
	// MaxGroupBytes bounds a group name. Kafka sets none; a bound keeps keys
	// small and an accidental blob out of the key space.
	MaxGroupBytes = 255
	// MaxMetadataBytes bounds the metadata of one offset, as Kafka's
	// offset.metadata.max.bytes default.
	MaxMetadataBytes = 4096
)

// valueVersion is the first byte of every stored value.
const valueVersion = 1

// valueHeader is the size of a value without its metadata.
const valueHeader = 1 + 8 + 8

// Committed is one committed offset of a group.
type Committed struct {
	Topic     string
	Partition int32
	// Offset is the next offset the group will read.
	Offset   int64
	Metadata string
	// CommitTime is when the store accepted the commit (ms precision). It is
	// ignored by Commit, which stamps its own clock.
	CommitTime time.Time
}

// Options configure a Store. The zero value is usable.
type Options struct {
	// Now stamps commit times; nil means time.Now.
	Now func() time.Time
}

// Store reads and writes committed offsets in a Pebble DB it shares with the
// rest of the node. It owns the keys under "offsets/", "groupgen/"
// (generation.go) and "groupstate/" (groupstate.go) and does not close the
// DB. It is safe for concurrent use.
type Store struct {
	db    *pebble.DB
	now   func() time.Time
	genMu sync.Mutex // serializes RecordGeneration's check and write
}

// New returns a Store over db.
func New(db *pebble.DB, opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}
}

// Commit stores the offsets of one group atomically and durably: one Pebble
// batch, synced before Commit returns. Either every offset is stored or none
// is. Offsets of the group not named in cs are left as they are.
func (s *Store) Commit(group string, cs []Committed) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	if len(cs) == 0 {
		return nil
	}
	type tp struct {
		topic     string
		partition int32
	}
	seen := make(map[tp]bool, len(cs))
	for _, c := range cs {
		if err := validateCommitted(c); err != nil {
			return fmt.Errorf("commit group %q: %w", group, err)
		}
		k := tp{c.Topic, c.Partition}
		if seen[k] {
			return fmt.Errorf("commit group %q: %w: %s/%d appears twice in one commit", group, ErrInvalidArgument, c.Topic, c.Partition)
		}
		seen[k] = true
	}
	ms := s.now().UnixMilli()
	b := s.db.NewBatch()
	defer b.Close()
	for _, c := range cs {
		if err := b.Set(offsetKey(group, c.Topic, c.Partition), encodeValue(c.Offset, ms, c.Metadata), nil); err != nil {
			return fmt.Errorf("commit group %q: %w", group, err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("commit group %q: %w", group, err)
	}
	return nil
}

// Fetch returns the group's committed offsets for topic, or for every topic
// when topic is "", ordered by topic then partition. A group with nothing
// committed has no offsets and no error.
func (s *Store) Fetch(group, topic string) ([]Committed, error) {
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	prefix := groupPrefix(group)
	if topic != "" {
		if err := routing.ValidateTopicName(topic); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		prefix = topicPrefix(group, topic)
	}
	var out []Committed
	err := s.scan(prefix, func(_ string, c Committed) error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fetch group %q: %w", group, err)
	}
	return out, nil
}

// Get returns one committed offset; ok is false when the group has none for
// the partition.
func (s *Store) Get(group, topic string, partition int32) (c Committed, ok bool, err error) {
	if err := validatePartition(group, topic, partition); err != nil {
		return Committed{}, false, err
	}
	key := offsetKey(group, topic, partition)
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return Committed{}, false, nil
	}
	if err != nil {
		return Committed{}, false, fmt.Errorf("get group %q %s/%d: %w", group, topic, partition, err)
	}
	defer closer.Close()
	c, err = decodeValue(key, v)
	if err != nil {
		return Committed{}, false, err
	}
	c.Topic, c.Partition = topic, partition
	return c, true, nil
}

// Groups lists the groups that have at least one committed offset, sorted.
// It visits one key per group, skipping over each group's offsets.
func (s *Store) Groups() ([]string, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(keyPrefix), UpperBound: prefixUpper})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	defer it.Close()
	var groups []string
	for ok := it.First(); ok; {
		group, _, _, err := parseKey(it.Key())
		if err != nil {
			return nil, err
		}
		groups = append(groups, group)
		ok = it.SeekGE(prefixEnd(groupPrefix(group)))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return groups, nil
}

// DeleteTopic removes every group's offsets for topic, in one synced batch.
// The server calls it when the topic is deleted, so a topic created again
// under the same name starts with no committed offsets. The groups are
// listed first, so the caller must already refuse commits to the topic (a
// commit naming a group new to the store could land in between).
func (s *Store) DeleteTopic(topic string) error {
	if err := routing.ValidateTopicName(topic); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	groups, err := s.Groups()
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, g := range groups {
		p := topicPrefix(g, topic)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return fmt.Errorf("delete topic %q offsets: %w", topic, err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete topic %q offsets: %w", topic, err)
	}
	return nil
}

// DeleteGroup removes every committed offset of a group, in one synced
// write.
func (s *Store) DeleteGroup(group string) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	p := groupPrefix(group)
	if err := s.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("delete group %q: %w", group, err)
	}
	return nil
}

// scan calls fn for every offset stored under prefix, in key order.
func (s *Store) scan(prefix []byte, fn func(group string, c Committed) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		group, topic, part, err := parseKey(it.Key())
		if err != nil {
			return err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		c, err := decodeValue(it.Key(), v)
		if err != nil {
			return err
		}
		c.Topic, c.Partition = topic, part
		if err := fn(group, c); err != nil {
			return err
		}
	}
	return it.Error()
}

func encodeValue(offset, commitMs int64, metadata string) []byte {
	v := make([]byte, valueHeader, valueHeader+len(metadata))
	v[0] = valueVersion
	binary.BigEndian.PutUint64(v[1:], uint64(offset))
	binary.BigEndian.PutUint64(v[9:], uint64(commitMs))
	return append(v, metadata...)
}

func decodeValue(key, v []byte) (Committed, error) {
	if len(v) < valueHeader {
		return Committed{}, fmt.Errorf("%w: key %q: value of %d bytes, want at least %d", ErrCorrupt, key, len(v), valueHeader)
	}
	if v[0] != valueVersion {
		return Committed{}, fmt.Errorf("%w: key %q: value version %d, want %d", ErrCorrupt, key, v[0], valueVersion)
	}
	off := int64(binary.BigEndian.Uint64(v[1:]))
	if off < 0 {
		return Committed{}, fmt.Errorf("%w: key %q: negative offset %d", ErrCorrupt, key, off)
	}
	return Committed{
		Offset:     off,
		CommitTime: time.UnixMilli(int64(binary.BigEndian.Uint64(v[9:]))),
		Metadata:   string(v[valueHeader:]),
	}, nil
}

func validateGroup(group string) error {
	if group == "" {
		return fmt.Errorf("%w: empty consumer group name", ErrInvalidArgument)
	}
	if len(group) > MaxGroupBytes {
		return fmt.Errorf("%w: consumer group name of %d bytes, at most %d allowed", ErrInvalidArgument, len(group), MaxGroupBytes)
	}
	return nil
}

func validatePartition(group, topic string, part int32) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	if err := routing.ValidateTopicName(topic); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if part < 0 {
		return fmt.Errorf("%w: partition %d of topic %q is negative", ErrInvalidArgument, part, topic)
	}
	return nil
}

func validateCommitted(c Committed) error {
	if err := routing.ValidateTopicName(c.Topic); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if c.Partition < 0 {
		return fmt.Errorf("%w: partition %d of topic %q is negative", ErrInvalidArgument, c.Partition, c.Topic)
	}
	if c.Offset < 0 {
		return fmt.Errorf("%w: offset %d for %s/%d is negative; commit the next offset to read (>= 0)", ErrInvalidArgument, c.Offset, c.Topic, c.Partition)
	}
	if len(c.Metadata) > MaxMetadataBytes {
		return fmt.Errorf("%w: metadata for %s/%d is %d bytes, at most %d allowed", ErrInvalidArgument, c.Topic, c.Partition, len(c.Metadata), MaxMetadataBytes)
	}
	return nil
}

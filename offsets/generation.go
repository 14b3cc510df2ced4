package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// genPrefix is the start of every group-generation key (see doc.go).
const genPrefix = "groupgen/"

// genValueVersion is the first byte of a group-generation value.
const genValueVersion = 1

// ErrGenerationTaken: RecordGeneration was asked for a generation not
// above the group's recorded one (another coordinator, or this one before a
// restart, recorded it or a later one). Returned as a *GenerationTakenError.
var ErrGenerationTaken = errors.New("offsets: generation already recorded")

// GenerationTakenError says which generation a group has recorded.
type GenerationTakenError struct {
	Group           string
	Asked, Recorded int32
}

func (e *GenerationTakenError) Error() string {
	return fmt.Sprintf("consumer group %q: generation %d asked, %d already recorded: a generation must be above it",
		e.Group, e.Asked, e.Recorded)
}

func (e *GenerationTakenError) Unwrap() error { return ErrGenerationTaken }

func genKey(group string) []byte { return appendString([]byte(genPrefix), group) }

// Generation is the highest generation recorded for group (0: none).
func (s *Store) Generation(group string) (int32, error) {
	if err := validateGroup(group); err != nil {
		return 0, err
	}
	key := genKey(group)
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("generation of group %q: %w", group, err)
	}
	defer closer.Close()
	return decodeGen(key, v)
}

// RecordGeneration records, durably (a synced write), that group's
// coordinator hands out generation gen. gen must be above the generation
// recorded already: else nothing changes and the error is a
// *GenerationTakenError (so applying the same record twice leaves the
// same state). Calls for one Store are serialized: the check and the write
// are one step.
func (s *Store) RecordGeneration(group string, gen int32) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	if gen <= 0 {
		return fmt.Errorf("%w: generation %d of group %q: generations start at 1", ErrInvalidArgument, gen, group)
	}
	s.genMu.Lock()
	defer s.genMu.Unlock()
	cur, err := s.Generation(group)
	if err != nil {
		return err
	}
	if gen <= cur {
		return &GenerationTakenError{Group: group, Asked: gen, Recorded: cur}
	}
	v := binary.BigEndian.AppendUint32([]byte{genValueVersion}, uint32(gen))
	if err := s.db.Set(genKey(group), v, pebble.Sync); err != nil {
		return fmt.Errorf("record generation %d of group %q: %w", gen, group, err)
	}
	return nil
}

// Generations returns every group's recorded generation (for snapshots).
func (s *Store) Generations() (map[string]int32, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(genPrefix), UpperBound: prefixEnd([]byte(genPrefix))})
	if err != nil {
		return nil, fmt.Errorf("list generations: %w", err)
	}
	defer it.Close()
	out := map[string]int32{}
	for ok := it.First(); ok; ok = it.Next() {
		group, rest, err := readString(it.Key()[len(genPrefix):])
		if err != nil || len(rest) != 0 {
			return nil, fmt.Errorf("%w: generation key %q", ErrCorrupt, it.Key())
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if out[group], err = decodeGen(it.Key(), v); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("list generations: %w", err)
	}
	return out, nil
}

// SetGenerations replaces every recorded generation with gens, in one
// synced batch (restoring a snapshot).
func (s *Store) SetGenerations(gens map[string]int32) error {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte(genPrefix), prefixEnd([]byte(genPrefix)), nil); err != nil {
		return err
	}
	for g, gen := range gens {
		if err := validateGroup(g); err != nil {
			return err
		}
		v := binary.BigEndian.AppendUint32([]byte{genValueVersion}, uint32(gen))
		if err := b.Set(genKey(g), v, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

func decodeGen(key, v []byte) (int32, error) {
	if len(v) != 5 || v[0] != genValueVersion {
		return 0, fmt.Errorf("%w: key %q: generation value of %d bytes (version %v), want 5 (version %d)",
			ErrCorrupt, key, len(v), v[:min(len(v), 1)], genValueVersion)
	}
	g := int32(binary.BigEndian.Uint32(v[1:]))
	if g < 0 {
		return 0, fmt.Errorf("%w: key %q: negative generation %d", ErrCorrupt, key, g)
	}
	return g, nil
}

package offsets

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// statePrefix is the start of every group-state key (see doc.go).
const statePrefix = "groupstate/"

func stateKey(group string) []byte { return appendString([]byte(statePrefix), group) }

// SaveGroupState records, durably (a synced write), the membership record
// of group a coordinator that runs alone made for its last completed
// generation (groups.EncodeGroupState; opaque here), replacing the one
// before; an empty enc removes it. The coordinator of the restarted node
// takes the group over from it.
func (s *Store) SaveGroupState(group string, enc []byte) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	var err error
	if len(enc) == 0 {
		err = s.db.Delete(stateKey(group), pebble.Sync)
	} else {
		err = s.db.Set(stateKey(group), enc, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("record the state of group %q: %w", group, err)
	}
	return nil
}

// GroupStates returns every group's recorded state, by group.
func (s *Store) GroupStates() (map[string][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(statePrefix), UpperBound: prefixEnd([]byte(statePrefix))})
	if err != nil {
		return nil, fmt.Errorf("list group states: %w", err)
	}
	defer it.Close()
	out := map[string][]byte{}
	for ok := it.First(); ok; ok = it.Next() {
		group, rest, err := readString(it.Key()[len(statePrefix):])
		if err != nil || len(rest) != 0 {
			return nil, fmt.Errorf("%w: group state key %q", ErrCorrupt, it.Key())
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		out[group] = append([]byte(nil), v...)
	}
	if err := it.Error(); err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("list group states: %w", err)
	}
	return out, nil
}

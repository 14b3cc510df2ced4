package offsets

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/routing"
)

// Delete removes the group's committed offsets of the partitions named in
// cs (their Offset and Metadata are ignored), in one synced batch. A
// partition with no committed offset is no change. The group's other
// offsets and its generation stay.
func (s *Store) Delete(group string, cs []Committed) error {
	if err := validateGroup(group); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, c := range cs {
		if err := routing.ValidateTopicName(c.Topic); err != nil {
			return fmt.Errorf("delete offsets of group %q: %w: %v", group, ErrInvalidArgument, err)
		}
		if err := b.Delete(offsetKey(group, c.Topic, c.Partition), nil); err != nil {
			return fmt.Errorf("delete offsets of group %q: %w", group, err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete offsets of group %q: %w", group, err)
	}
	return nil
}

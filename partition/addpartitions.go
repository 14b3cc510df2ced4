package partition

import (
	"fmt"
	"slices"
)

// AddPartitions grows a topic to count partitions: the new ones (IDs from
// the current count on) start empty. count must be more than the topic
// has; partitions are never removed. Like Create, it opens the new
// partitions' logs (openParallel at a time) before it writes the config
// (synced), so a crash in between leaves directories of no partition,
// which the next add moves aside; and when one fails to open, it closes
// those it opened, removes their directories and keeps the old count.
//
// Keys hash over the partition count (routing.ForKey), so from now on a
// key's new records may go to another partition than its old ones.
func (t *Topics) AddPartitions(name string, count int32) (TopicConfig, error) {
	t.changing.Lock()
	defer t.changing.Unlock()
	if t.closed {
		return TopicConfig{}, ErrClosed
	}
	tp, ok := t.topics[name]
	if !ok {
		return TopicConfig{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	old := tp.config
	if err := ValidateGrowth(old, count); err != nil {
		return old, err
	}
	c := old
	c.Partitions = count
	if err := t.moveAsideOrphans(name, old.Partitions, count); err != nil {
		return old, fmt.Errorf("add partitions to %q: %w", name, err)
	}
	added, err := t.openPartitions(refs(c, old.Partitions, count))
	if err != nil {
		t.discardNew(name, old.Partitions, count, nil)
		return old, fmt.Errorf("add partitions to %q: %w", name, err)
	}
	if err := t.reg.put(c); err != nil {
		t.discardNew(name, old.Partitions, count, added)
		return old, err
	}
	t.mu.Lock()
	// A new slice: callers of Partitions hold the old one without the lock.
	tp.partitions = append(slices.Clip(tp.partitions), added...)
	tp.config = c
	t.mu.Unlock()
	return c, nil
}

// ValidateGrowth checks a request to grow topic c to count partitions:
// more than it has, at most MaxPartitions. Errors wrap ErrInvalidConfig.
func ValidateGrowth(c TopicConfig, count int32) error {
	switch {
	case count <= c.Partitions:
		return fmt.Errorf("%w: topic %q has %d partitions; the new count must be more (partitions are only added, never removed), got %d",
			ErrInvalidConfig, c.Name, c.Partitions, count)
	case count > MaxPartitions:
		return fmt.Errorf("%w: partitions must be between 1 and %d, got %d", ErrInvalidConfig, MaxPartitions, count)
	}
	return nil
}

package partition

import (
	"fmt"
	"os"
	"slices"
)

// AddPartitions grows a topic to count partitions: the new ones (IDs from
// the current count on) start empty. count must be more than the topic
// has; partitions are never removed. Like Create, it opens the new
// partitions' logs before it writes the config (synced), so a crash in
// between leaves directories of no partition, which the next add moves
// aside.
//
// Keys hash over the partition count (routing.ForKey), so from now on a
// key's new records may go to another partition than its old ones.
func (t *Topics) AddPartitions(name string, count int32) (TopicConfig, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	var added []*Partition
	for i := old.Partitions; i < count; i++ {
		p, err := t.openPartition(c, i)
		if err != nil {
			t.discardAdded(name, old.Partitions, count, added)
			return old, err
		}
		added = append(added, p)
	}
	if err := t.reg.put(c); err != nil {
		t.discardAdded(name, old.Partitions, count, added)
		return old, err
	}
	// A new slice: callers of Partitions hold the old one without the lock.
	tp.partitions = append(slices.Clip(tp.partitions), added...)
	tp.config = c
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

// discardAdded undoes a failed add: it closes the partitions opened and
// removes their directories, and the one that failed to open.
func (t *Topics) discardAdded(name string, from, to int32, opened []*Partition) {
	for _, p := range opened {
		p.Log.Close()
	}
	for i := range min(int32(len(opened))+1, to-from) {
		os.RemoveAll(t.partitionDir(name, from+i))
	}
}

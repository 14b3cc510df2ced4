package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/log"
	"github.com/logd/logd/routing"
)

// Options configure Topics.
type Options struct {
	DataDir string     // partitions live in DataDir/partitions
	DB      *pebble.DB // the node's metadata DB
	// LogOptions returns the options of a partition's log for a topic
	// config (fsync policy, hooks, segment limits).
	LogOptions func(TopicConfig) log.Options
	Logger     *slog.Logger
	Now        func() time.Time
}

// Topics is the set of topics on this node and their open partitions.
//
// Changes (Create, AddPartitions, Alter, Delete, Close) take changing, one
// at a time, and hold it across their disk work: opening thousands of logs
// takes seconds. Readers (Config, Partitions, List, Each) take mu only,
// which a change holds just to write the map or a topic's fields, so a
// produce or fetch never waits for a create's disk work.
type Topics struct {
	opts Options
	reg  registry
	dir  string

	changing sync.Mutex
	closed   bool // guarded by changing

	// mu guards topics and each topic's fields for readers; a writer
	// holds changing too, so a holder of changing reads them without mu.
	mu     sync.RWMutex
	topics map[string]*topic
}

type topic struct {
	config     TopicConfig
	partitions []*Partition
}

// Open opens every topic in the registry and its partitions' logs, and
// removes directories left by a create or delete that a crash interrupted.
func Open(opts Options) (*Topics, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LogOptions == nil {
		opts.LogOptions = func(TopicConfig) log.Options { return log.Options{} }
	}
	t := &Topics{opts: opts, reg: registry{opts.DB}, dir: filepath.Join(opts.DataDir, "partitions"), topics: map[string]*topic{}}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return nil, err
	}
	configs, err := t.reg.list()
	if err != nil {
		return nil, err
	}
	var live []TopicConfig
	var rs []partitionRef
	for _, c := range configs {
		if t.deleting(c) {
			t.opts.Logger.Warn("finishing the deletion of a topic interrupted by a crash", "topic", c.Name)
			if err := t.finishDelete(c.Name, int(c.Partitions)); err != nil {
				return nil, err
			}
			continue
		}
		live = append(live, c)
		rs = append(rs, refs(c, 0, c.Partitions)...)
	}
	// Every topic's partitions in one fan-out: a node of many small
	// topics restarts as fast as one of a few big ones.
	ps, err := t.openPartitions(rs)
	if err != nil {
		return nil, err
	}
	for _, c := range live {
		t.topics[c.Name] = &topic{config: c, partitions: ps[:c.Partitions:c.Partitions]}
		ps = ps[c.Partitions:]
	}
	t.removeLeftovers()
	return t, nil
}

// deleting reports whether a crash interrupted the deletion of topic c:
// one of its partition directories was already renamed aside.
func (t *Topics) deleting(c TopicConfig) bool {
	for i := range c.Partitions {
		if _, err := os.Stat(t.partitionDir(c.Name, i) + ".deleted"); err == nil {
			return true
		}
	}
	return false
}

func (t *Topics) partitionDir(topic string, id int32) string {
	return filepath.Join(t.dir, topic+"-"+strconv.Itoa(int(id)))
}

// removeLeftovers removes "*.deleted" directories and empty directories of
// topics that do not exist. A non-empty directory of an unknown topic is
// left alone with a warning: it may be data an operator wants back.
func (t *Topics) removeLeftovers() {
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(t.dir, name)
		if strings.Contains(name, ".orphaned-") {
			continue // moved aside by Create, kept for the operator
		}
		if strings.HasSuffix(name, ".deleted") {
			os.RemoveAll(path)
			continue
		}
		i := strings.LastIndexByte(name, '-')
		if i < 0 {
			continue
		}
		if _, ok := t.topics[name[:i]]; ok {
			continue
		}
		if inner, _ := os.ReadDir(path); len(inner) == 0 {
			os.Remove(path)
		} else {
			t.opts.Logger.Warn("partition directory of an unknown topic left in place", "dir", path)
		}
	}
}

// Create creates a topic with its partitions, their logs opened
// openParallel at a time. When one fails to open, it closes those it
// opened, removes their directories and stores nothing.
func (t *Topics) Create(c TopicConfig) (TopicConfig, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	t.changing.Lock()
	defer t.changing.Unlock()
	if t.closed {
		return c, ErrClosed
	}
	if _, ok := t.topics[c.Name]; ok {
		return c, fmt.Errorf("%w: %q", ErrTopicExists, c.Name)
	}
	if c.CreatedMs == 0 { // a cluster passes the metadata group's
		c.CreatedMs = t.opts.Now().UnixMilli()
	}
	if err := t.moveAsideOrphans(c.Name, 0, c.Partitions); err != nil {
		return c, fmt.Errorf("create topic %q: %w", c.Name, err)
	}
	ps, err := t.openPartitions(refs(c, 0, c.Partitions))
	if err != nil {
		t.discardNew(c.Name, 0, c.Partitions, nil)
		return c, fmt.Errorf("create topic %q: %w", c.Name, err)
	}
	if err := t.reg.put(c); err != nil {
		t.discardNew(c.Name, 0, c.Partitions, ps)
		return c, err
	}
	t.mu.Lock()
	t.topics[c.Name] = &topic{config: c, partitions: ps}
	t.mu.Unlock()
	return c, nil
}

// moveAsideOrphans moves aside the directories of partitions from..to-1
// of a topic that does not have them yet: such a directory belongs to no
// partition (a create or add that a crash interrupted, or a copy an
// operator put there), so it is moved aside, not reused, and the new
// partition starts empty.
func (t *Topics) moveAsideOrphans(name string, from, to int32) error {
	for i := from; i < to; i++ {
		dir := t.partitionDir(name, i)
		if _, err := os.Stat(dir); err == nil {
			aside := fmt.Sprintf("%s.orphaned-%d", dir, t.opts.Now().UnixNano())
			if err := os.Rename(dir, aside); err != nil {
				return fmt.Errorf("move aside %s: %w", dir, err)
			}
			t.opts.Logger.Warn("moved aside a directory of no topic", "dir", dir, "to", aside)
		}
	}
	return nil
}

// discardNew undoes a failed create or add of partitions from..to-1: it
// closes those opened and removes every one's directory. None of them
// existed before (moveAsideOrphans moved any aside), so whatever is there
// is this create's: a log opened, or one that failed after log.Open made
// its directory.
func (t *Topics) discardNew(name string, from, to int32, opened []*Partition) {
	for _, p := range opened {
		p.Log.Close()
	}
	for i := from; i < to; i++ {
		os.RemoveAll(t.partitionDir(name, i))
	}
}

// Config returns a topic's config.
func (t *Topics) Config(name string) (TopicConfig, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tp, ok := t.topics[name]
	if !ok {
		return TopicConfig{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	return tp.config, nil
}

// Partitions returns a topic's config and partitions.
func (t *Topics) Partitions(name string) (TopicConfig, []*Partition, error) {
	if err := routing.ValidateTopicName(name); err != nil {
		return TopicConfig{}, nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	tp, ok := t.topics[name]
	if !ok {
		return TopicConfig{}, nil, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	return tp.config, tp.partitions, nil
}

// Partition returns one partition.
func (t *Topics) Partition(name string, id int32) (*Partition, error) {
	c, ps, err := t.Partitions(name)
	if err != nil {
		return nil, err
	}
	if id < 0 || int(id) >= len(ps) {
		return nil, fmt.Errorf("%w: topic %q has partitions 0 to %d, not %d", ErrPartitionNotFound, name, c.Partitions-1, id)
	}
	return ps[id], nil
}

// List returns every topic's config, sorted by name.
func (t *Topics) List() []TopicConfig {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]TopicConfig, 0, len(t.topics))
	for _, tp := range t.topics {
		out = append(out, tp.config)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Each calls fn for every partition of every topic with its topic's config.
func (t *Topics) Each(fn func(TopicConfig, *Partition)) {
	t.mu.RLock()
	type pair struct {
		c TopicConfig
		p *Partition
	}
	var all []pair
	for _, tp := range t.topics {
		for _, p := range tp.partitions {
			all = append(all, pair{tp.config, p})
		}
	}
	t.mu.RUnlock()
	for _, a := range all {
		fn(a.c, a.p)
	}
}

// Alter changes a topic's retention and segment settings. Retention takes
// effect at the next trim, segment settings at the next append.
func (t *Topics) Alter(name string, ch ConfigChange) (TopicConfig, error) {
	t.changing.Lock()
	defer t.changing.Unlock()
	tp, ok := t.topics[name]
	if !ok {
		return TopicConfig{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	c := tp.config.Apply(ch)
	if err := c.Validate(); err != nil {
		return tp.config, err
	}
	if err := t.reg.put(c); err != nil {
		return tp.config, err
	}
	t.mu.Lock()
	tp.config = c
	t.mu.Unlock()
	for _, p := range tp.partitions {
		p.Log.SetSegmentLimits(c.SegmentBytes, time.Duration(c.SegmentMs)*time.Millisecond)
	}
	return c, nil
}

// Delete removes a topic and its data. The partition directories are
// renamed to "<dir>.deleted" (and the rename synced) before the config is
// removed, so a crash midway leaves either the whole topic or a topic whose
// deletion Open finishes; a topic created again under the name never sees
// the old records.
func (t *Topics) Delete(name string) error {
	t.changing.Lock()
	defer t.changing.Unlock()
	tp, ok := t.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	t.mu.Lock()
	delete(t.topics, name)
	t.mu.Unlock()
	for _, p := range tp.partitions {
		p.Log.Close()
	}
	if err := t.finishDelete(name, len(tp.partitions)); err != nil {
		return err
	}
	return nil
}

// finishDelete moves a topic's partition directories aside, syncs that,
// removes the topic's config, then the directories.
func (t *Topics) finishDelete(name string, partitions int) error {
	for i := range partitions {
		dir := t.partitionDir(name, int32(i))
		if err := os.Rename(dir, dir+".deleted"); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("delete topic %q: %w", name, err)
		}
	}
	if err := syncDir(t.dir); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	if err := t.reg.delete(name); err != nil {
		return err
	}
	var errs []error
	for i := range partitions {
		errs = append(errs, os.RemoveAll(t.partitionDir(name, int32(i))+".deleted"))
	}
	return errors.Join(errs...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Close closes every partition's log, openParallel at a time: each syncs
// what it holds unsynced, and one after the other a node of thousands of
// partitions would wait for each of those fsyncs in turn to stop.
func (t *Topics) Close() error {
	t.changing.Lock()
	defer t.changing.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var ps []*Partition
	for _, tp := range t.topics {
		ps = append(ps, tp.partitions...)
	}
	errs := make([]error, len(ps))
	fanout.Run(context.Background(), len(ps), openParallel, func(_ context.Context, i int) { errs[i] = ps[i].Log.Close() })
	return errors.Join(errs...)
}

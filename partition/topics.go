package partition

import (
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
type Topics struct {
	opts Options
	reg  registry
	dir  string

	mu     sync.RWMutex
	topics map[string]*topic
	closed bool
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
	for _, c := range configs {
		if t.deleting(c) {
			t.opts.Logger.Warn("finishing the deletion of a topic interrupted by a crash", "topic", c.Name)
			if err := t.finishDelete(c.Name, int(c.Partitions)); err != nil {
				return nil, err
			}
			continue
		}
		tp := &topic{config: c}
		for i := int32(0); i < c.Partitions; i++ {
			p, err := t.openPartition(c, i)
			if err != nil {
				for _, p := range tp.partitions {
					p.Log.Close()
				}
				t.closeAll()
				return nil, err
			}
			tp.partitions = append(tp.partitions, p)
		}
		t.topics[c.Name] = tp
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

func (t *Topics) openPartition(c TopicConfig, id int32) (*Partition, error) {
	dir := t.partitionDir(c.Name, id)
	l, err := log.Open(dir, t.opts.LogOptions(c))
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", c.Name, id, err)
	}
	if r := l.Recovery(); r.TruncatedBytes > 0 || r.RebuiltIndexes > 0 {
		t.opts.Logger.Warn("partition recovered", "partition", fmt.Sprintf("%s-%d", c.Name, id),
			"truncated_bytes", r.TruncatedBytes, "truncated_at", r.TruncatedAt, "rebuilt_indexes", r.RebuiltIndexes)
	}
	p := newPartition(c.Name, id, l)
	if err := p.recoverProducers(); err != nil {
		l.Close()
		return nil, err
	}
	return p, nil
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

// Create creates a topic with its partitions.
func (t *Topics) Create(c TopicConfig) (TopicConfig, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
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
	tp := &topic{config: c}
	for i := int32(0); i < c.Partitions; i++ {
		p, err := t.openPartition(c, i)
		if err != nil {
			t.discardCreated(c, tp.partitions)
			return c, err
		}
		tp.partitions = append(tp.partitions, p)
	}
	if err := t.reg.put(c); err != nil {
		t.discardCreated(c, tp.partitions)
		return c, err
	}
	t.topics[c.Name] = tp
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

// discardCreated undoes a failed create: it closes the partitions opened
// and removes their directories, and the directory of the one that failed
// to open (log.Open may have made it before failing).
func (t *Topics) discardCreated(c TopicConfig, opened []*Partition) {
	for _, p := range opened {
		p.Log.Close()
	}
	for i := range min(int32(len(opened))+1, c.Partitions) {
		os.RemoveAll(t.partitionDir(c.Name, i))
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
	t.mu.Lock()
	defer t.mu.Unlock()
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
	tp.config = c
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
	t.mu.Lock()
	tp, ok := t.topics[name]
	if !ok {
		t.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
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

// Close closes every partition's log (each syncs what it holds).
func (t *Topics) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return t.closeAll()
}

func (t *Topics) closeAll() error {
	var errs []error
	for _, tp := range t.topics {
		for _, p := range tp.partitions {
			errs = append(errs, p.Log.Close())
		}
	}
	return errors.Join(errs...)
}

package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/offsets"
)

// fakeCore is an in-memory Core for the listener's unit tests: one node,
// batches kept as sent (base offset rewritten), no dedup, committed
// offsets in a map. The end-to-end tests use the real core.
type fakeCore struct {
	mu      sync.Mutex
	topics  map[string]*fakeTopic
	order   []string
	commits map[string]map[string]map[int32]offsets.Committed // group, topic, partition
	changed chan struct{}
	nextPID int64
	coord   *groups.Coordinator
	produce func(ProduceRequest) error // optional failure injection
	acls    *auth.MemoryACLStore
	// described counts Topic calls (a describe with every leader's
	// offsets), see Topic.
	described atomic.Int32
	// metaLeader, when set, makes the fake a node of a cluster that does
	// not lead its metadata, as the real core answers there: Coordinator
	// is *NotCoordinatorError and a topic it lacks *NotLeaderError, both
	// naming metaLeader.
	metaLeader *Node
}

type fakeTopic struct {
	cfg   broker.TopicConfig
	parts [][]fakeBatch
}

type fakeBatch struct {
	base, next int64
	data       []byte
}

func newFakeCore() *fakeCore {
	f := &fakeCore{
		topics:  map[string]*fakeTopic{},
		commits: map[string]map[string]map[int32]offsets.Committed{},
		changed: make(chan struct{}),
		acls:    auth.NewMemoryACLStore(),
	}
	f.coord = groups.New(groups.Config{Partitions: func(t string) int32 {
		f.mu.Lock()
		defer f.mu.Unlock()
		if tp, ok := f.topics[t]; ok {
			return tp.cfg.Partitions
		}
		return 0
	}})
	return f
}

func (f *fakeCore) LocalNode() Node {
	return Node{ID: "n1", KafkaID: 1}
}

func (f *fakeCore) Nodes(context.Context) ([]Node, error) { return []Node{f.LocalNode()}, nil }

func (f *fakeCore) NodeLive(context.Context, string) bool { return true }

func (f *fakeCore) info(t *fakeTopic) TopicInfo {
	ti := TopicInfo{Config: t.cfg}
	for i, p := range t.parts {
		hw := int64(0)
		if len(p) > 0 {
			hw = p[len(p)-1].next
		}
		ti.Partitions = append(ti.Partitions, PartitionInfo{
			ID: int32(i), HighWatermark: hw, Leader: "n1", Replicas: []string{"n1"}, ISR: []string{"n1"},
		})
	}
	return ti
}

func (f *fakeCore) TopicLayouts(context.Context, Principal) ([]TopicInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TopicInfo
	for _, n := range f.order {
		out = append(out, f.info(f.topics[n]))
	}
	return out, nil
}

func (f *fakeCore) TopicLayout(_ context.Context, _ Principal, name string) (TopicInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	if !ok && f.metaLeader != nil {
		return TopicInfo{}, &NotLeaderError{What: "the cluster metadata", Leader: *f.metaLeader, Untouched: true}
	}
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w %q", ErrUnknownTopic, name)
	}
	return f.info(t), nil
}

// Topic is TopicLayout, counted: the real one asks every partition's
// leader (a Raft round each), which Metadata must not.
func (f *fakeCore) Topic(ctx context.Context, p Principal, name string) (TopicInfo, error) {
	f.described.Add(1)
	return f.TopicLayout(ctx, p, name)
}

func (f *fakeCore) CreateTopic(_ context.Context, _ Principal, cfg broker.TopicConfig) (broker.TopicConfig, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.topics[cfg.Name]; ok {
		return cfg, fmt.Errorf("%w: %q", ErrTopicExists, cfg.Name)
	}
	f.topics[cfg.Name] = &fakeTopic{cfg: cfg, parts: make([][]fakeBatch, cfg.Partitions)}
	f.order = append(f.order, cfg.Name)
	return cfg, nil
}

func (f *fakeCore) DeleteTopic(_ context.Context, _ Principal, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.topics[name]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownTopic, name)
	}
	delete(f.topics, name)
	for i, n := range f.order {
		if n == name {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
	return nil
}

// produced is a ProduceFuture answered already.
type produced ProduceResult

func (p produced) Wait() (ProduceResult, error) { return ProduceResult(p), nil }

func (f *fakeCore) StartProduce(_ context.Context, r ProduceRequest) (ProduceFuture, error) {
	if f.produce != nil {
		if err := f.produce(r); err != nil {
			return nil, err
		}
	}
	info, err := batch.ParseHeader(r.Batch)
	if err != nil || info.Size() != len(r.Batch) {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[r.Topic]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTopic, r.Topic)
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.parts) {
		return nil, ErrUnknownPartition
	}
	p := t.parts[r.Partition]
	base := int64(0)
	if len(p) > 0 {
		base = p[len(p)-1].next
	}
	data := append([]byte(nil), r.Batch...)
	batch.SetBaseOffset(data, base)
	t.parts[r.Partition] = append(p, fakeBatch{base: base, next: base + int64(info.LastOffsetDelta) + 1, data: data})
	close(f.changed)
	f.changed = make(chan struct{})
	return produced{BaseOffset: base, AppendTimeMs: -1}, nil
}

func (f *fakeCore) NewProducerID(context.Context) (int64, int16, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextPID++
	return f.nextPID, 0, nil
}

func (f *fakeCore) read(r FetchRequest) (FetchResult, int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var res FetchResult
	n := 0
	for _, fp := range r.Partitions {
		out := FetchedPartition{Topic: fp.Topic, Partition: fp.Partition}
		t, ok := f.topics[fp.Topic]
		if !ok || fp.Partition < 0 || int(fp.Partition) >= len(t.parts) {
			out.Err = fmt.Errorf("%w %q", ErrUnknownTopic, fp.Topic)
			res.Partitions = append(res.Partitions, out)
			continue
		}
		p := t.parts[fp.Partition]
		if len(p) > 0 {
			out.HighWatermark = p[len(p)-1].next
		}
		if fp.Offset < 0 || fp.Offset > out.HighWatermark {
			out.Err = &broker.OutOfRangeError{Offset: fp.Offset, HighWatermark: out.HighWatermark}
		}
		for _, b := range p {
			if b.next > fp.Offset && out.Err == nil {
				out.Batches = append(out.Batches, b.data...)
			}
		}
		n += len(out.Batches)
		res.Partitions = append(res.Partitions, out)
	}
	return res, n, f.changed
}

func (f *fakeCore) Fetch(ctx context.Context, r FetchRequest) (FetchResult, error) {
	deadline := time.NewTimer(r.MaxWait)
	defer deadline.Stop()
	for {
		res, n, changed := f.read(r)
		if n >= max(r.MinBytes, 1) {
			return res, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

func (f *fakeCore) ListOffset(_ context.Context, _ Principal, topic string, part int32, spec int64) (int64, int64, error) {
	ti, err := f.Topic(context.Background(), "", topic)
	if err != nil {
		return 0, 0, err
	}
	pi := partitionInfo(ti, part)
	if pi == nil {
		return 0, 0, ErrUnknownPartition
	}
	if spec == Earliest {
		return 0, -1, nil
	}
	return pi.HighWatermark, -1, nil
}

func (f *fakeCore) CommitOffsets(_ context.Context, _ Principal, group, member string, gen int32, cs []offsets.Committed) error {
	if err := f.coord.ValidateCommit(group, member, gen); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.commits[group]
	if g == nil {
		g = map[string]map[int32]offsets.Committed{}
		f.commits[group] = g
	}
	for _, c := range cs {
		if g[c.Topic] == nil {
			g[c.Topic] = map[int32]offsets.Committed{}
		}
		g[c.Topic][c.Partition] = c
	}
	return nil
}

func (f *fakeCore) FetchOffsets(_ context.Context, _ Principal, group string, topics []string) ([]offsets.Committed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []offsets.Committed
	for t, ps := range f.commits[group] {
		if topics != nil && !contains(topics, t) {
			continue
		}
		for _, c := range ps {
			out = append(out, c)
		}
	}
	return out, nil
}

// The groups: the fake's coordinator, every call allowed (aclCore
// refuses).
func (f *fakeCore) GroupMember(_ context.Context, _ Principal, group string) (GroupMember, error) {
	if err := f.CoordinatesGroups(); err != nil {
		return nil, err
	}
	return fakeMember{f.coord, group}, nil
}

func (f *fakeCore) DescribeGroup(_ context.Context, _ Principal, group string) (groups.GroupDescription, error) {
	if err := f.CoordinatesGroups(); err != nil {
		return groups.GroupDescription{}, err
	}
	return f.coord.Describe(group)
}

func (f *fakeCore) ListMemberGroups(ctx context.Context, p Principal) ([]GroupListing, error) {
	if err := f.CoordinatesGroups(); err != nil {
		return nil, err
	}
	held, err := f.coord.List()
	if err != nil {
		return nil, err
	}
	committed, _ := f.ListGroups(ctx, p)
	var out []GroupListing
	isHeld := map[string]bool{}
	for _, l := range held {
		isHeld[l.Group] = true
		out = append(out, GroupListing{GroupListing: l})
	}
	for _, g := range committed {
		if !isHeld[g] {
			out = append(out, GroupListing{GroupListing: groups.GroupListing{Group: g, State: groups.Empty}, OffsetsOnly: true})
		}
	}
	return out, nil
}

// CoordinatesGroups: a fake with metaLeader set is a node that does not
// run the group coordinator.
func (f *fakeCore) CoordinatesGroups() error {
	if f.metaLeader != nil {
		return &NotCoordinatorError{Leader: *f.metaLeader}
	}
	return nil
}

type fakeMember struct {
	c     *groups.Coordinator
	group string
}

func (m fakeMember) Join(ctx context.Context, req groups.JoinRequest) (groups.JoinResult, error) {
	req.Group = m.group
	return m.c.JoinGroup(ctx, req)
}

func (m fakeMember) Sync(ctx context.Context, req groups.SyncRequest) (groups.SyncResult, error) {
	req.Group = m.group
	return m.c.SyncGroup(ctx, req)
}

func (m fakeMember) Heartbeat(member string, gen int32) error {
	return m.c.Heartbeat(m.group, member, gen)
}
func (m fakeMember) Leave(member string) error { return m.c.LeaveGroup(m.group, member) }

// DeleteRecords is not modelled by the fake: its tests run against the
// real core (deleterecords_test.go).
func (f *fakeCore) DeleteRecords(context.Context, Principal, string, int32, int64) (int64, error) {
	return 0, fmt.Errorf("fake core: DeleteRecords is not modelled")
}

// EpochEnd: the fake's batches all hold epoch 0, as a single node's do.
func (f *fakeCore) EpochEnd(ctx context.Context, p Principal, topic string, part int32, epoch int32) (int32, int64, error) {
	end, _, err := f.ListOffset(ctx, p, topic, part, Latest)
	return 0, end, err
}

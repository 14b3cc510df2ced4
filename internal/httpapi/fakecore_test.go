package httpapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/routing"
)

// fakeCore is an in-memory Core for the handler's unit tests: topics of
// stored batches, producer dedup by id and sequence, long-polling fetch.
// The end-to-end tests run the same handler over the real broker.
type fakeCore struct {
	described atomic.Int32 // Topic calls
	mu        sync.Mutex
	topics    map[string][]*fakePartition
	committed map[string][]offsets.Committed
	coord     *groups.Coordinator
	// anyChange is closed at every produce (a fetch of many partitions
	// waits for any of them).
	anyChange chan struct{}
	// notLeader makes Produce to these partitions of any topic answer
	// *NotLeaderError naming the node.
	notLeader map[int32]broker.Node
	// outstanding is the bytes of fetch responses not yet released;
	// maxOutstanding the most seen at once.
	outstanding, maxOutstanding int
	// counts answers ClusterRecordCounts.
	counts []broker.NodeRecordCounts
}

type fakePartition struct {
	batches  [][]byte
	next     int64
	start    int64
	changed  chan struct{}
	produced map[int64]broker.ProduceResult // by producer id (sequence 0 only)
	// lastStable, when > 0, is the partition's last stable offset (a
	// transaction open from there): latest under read_committed.
	lastStable int64
}

func newFakeCore() *fakeCore {
	return &fakeCore{topics: map[string][]*fakePartition{}, committed: map[string][]offsets.Committed{}, coord: groups.New(groups.Config{}), anyChange: make(chan struct{})}
}

func (f *fakeCore) addTopic(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := make([]*fakePartition, n)
	for i := range ps {
		ps[i] = &fakePartition{changed: make(chan struct{}), produced: map[int64]broker.ProduceResult{}}
	}
	f.topics[name] = ps
}

func (f *fakeCore) LocalNode() broker.Node { return broker.Node{ID: "n1", HTTPAddr: "127.0.0.1:1"} }
func (f *fakeCore) Nodes(context.Context) ([]broker.Node, error) {
	return []broker.Node{f.LocalNode(), {ID: "n2", HTTPAddr: "127.0.0.1:2"}, {ID: "n3", HTTPAddr: "0.0.0.0:3"}}, nil
}
func (f *fakeCore) ClusterRecordCounts(context.Context, broker.Principal) ([]broker.NodeRecordCounts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.counts), nil
}
func (f *fakeCore) ClusterStatus(context.Context, broker.Principal, bool) (cluster.Status, error) {
	return cluster.Status{Self: "n1", Nodes: []cluster.NodeStatus{{Node: f.LocalNode(), Alive: true}}}, nil
}

func (f *fakeCore) Topics(ctx context.Context, p broker.Principal) ([]broker.TopicInfo, error) {
	f.mu.Lock()
	names := make([]string, 0, len(f.topics))
	for n := range f.topics {
		names = append(names, n)
	}
	f.mu.Unlock()
	slices.Sort(names)
	var out []broker.TopicInfo
	for _, n := range names {
		t, _ := f.Topic(ctx, p, n)
		out = append(out, t)
	}
	return out, nil
}

// Topic is TopicLayout, counted: the real one asks every partition's
// leader for its offsets (a Raft round each), which a produce or a
// stream's start must not.
func (f *fakeCore) Topic(ctx context.Context, p broker.Principal, name string) (broker.TopicInfo, error) {
	f.described.Add(1)
	return f.TopicLayout(ctx, p, name)
}

func (f *fakeCore) TopicLayout(_ context.Context, _ broker.Principal, name string) (broker.TopicInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.topics[name]
	if !ok {
		return broker.TopicInfo{}, fmt.Errorf("%w: %q", broker.ErrUnknownTopic, name)
	}
	c := broker.DefaultConfig(name)
	c.Partitions = int32(len(ps))
	t := broker.TopicInfo{Config: c}
	for i, p := range ps {
		t.Partitions = append(t.Partitions, broker.PartitionInfo{ID: int32(i), LogStart: p.start, HighWatermark: p.next, Leader: "n1"})
	}
	return t, nil
}

func (f *fakeCore) partition(topic string, p int32) (*fakePartition, error) {
	ps, ok := f.topics[topic]
	if !ok {
		return nil, fmt.Errorf("%w: %q", broker.ErrUnknownTopic, topic)
	}
	if p < 0 || int(p) >= len(ps) {
		return nil, broker.ErrUnknownPartition
	}
	return ps[p], nil
}

func (f *fakeCore) Produce(_ context.Context, r broker.ProduceRequest) (broker.ProduceResult, error) {
	c, err := batch.Validate(r.Batch)
	if err != nil {
		return broker.ProduceResult{}, fmt.Errorf("%w: %v", broker.ErrInvalidBatch, err)
	}
	info := c.Info()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.notLeader[r.Partition]; ok {
		return broker.ProduceResult{}, &broker.NotLeaderError{What: fmt.Sprintf("partition %s-%d", r.Topic, r.Partition), Leader: n, Untouched: true}
	}
	p, err := f.partition(r.Topic, r.Partition)
	if err != nil {
		return broker.ProduceResult{}, err
	}
	if info.ProducerID >= 0 {
		if res, ok := p.produced[info.ProducerID]; ok {
			res.Duplicate = true
			return res, nil
		}
	}
	b := slices.Clone(r.Batch)
	batch.SetBaseOffset(b, p.next)
	p.batches = append(p.batches, b)
	res := broker.ProduceResult{BaseOffset: p.next, LogStart: p.start, AppendTimeMs: -1}
	p.next += int64(info.NumRecords)
	if info.ProducerID >= 0 {
		p.produced[info.ProducerID] = res
	}
	close(p.changed)
	p.changed = make(chan struct{})
	close(f.anyChange)
	f.anyChange = make(chan struct{})
	return res, nil
}

// ProduceRecords routes as the broker does (the named partition, the
// key's, else one partition for the unkeyed: the producer id's, else 0),
// and appends each partition's batch with Produce.
func (f *fakeCore) ProduceRecords(ctx context.Context, r broker.RecordsRequest) ([]broker.RecordsAppend, error) {
	t, err := f.TopicLayout(ctx, r.Principal, r.Topic)
	if err != nil {
		return nil, err
	}
	n := int32(len(t.Partitions))
	byPart := map[int32][]int{}
	for i, rec := range r.Records {
		part := rec.Partition
		switch {
		case part >= n:
			return nil, fmt.Errorf("record %d: partition %d does not exist, the topic %q has %d (0 to %d): %w", i, part, r.Topic, n, n-1, broker.ErrUnknownPartition)
		case part >= 0:
		case rec.Key != nil:
			part = routing.ForKey(rec.Key, int(n))
		case r.ProducerID >= 0:
			part = int32(r.ProducerID % int64(n))
		default:
			part = 0
		}
		byPart[part] = append(byPart[part], i)
	}
	prod := batch.NoProducer
	if r.ProducerID >= 0 {
		prod = batch.Producer{ID: r.ProducerID, Epoch: 0, Sequence: 0}
	}
	var out []broker.RecordsAppend
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		w := broker.RecordsAppend{Partition: part, Records: byPart[part]}
		var brs []batch.Record
		for _, i := range w.Records {
			rec := r.Records[i]
			brs = append(brs, batch.Record{Timestamp: time.Now().UnixMilli(), Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
		}
		w.Result, w.Err = f.Produce(ctx, broker.ProduceRequest{Principal: r.Principal, Topic: r.Topic, Partition: part,
			Batch: batch.Encode(nil, 0, prod, brs), Acks: r.Acks})
		out = append(out, w)
	}
	return out, nil
}

func (f *fakeCore) Fetch(ctx context.Context, r broker.FetchRequest) (broker.FetchResult, error) {
	deadline := time.NewTimer(r.MaxWait)
	defer deadline.Stop()
	for {
		res, total, wait, err := f.fetchOnce(r)
		if err != nil || total > 0 || r.MaxWait == 0 || failed(res) {
			return res, err
		}
		res.Release()
		select {
		case <-wait:
		case <-deadline.C:
			return res, nil
		case <-ctx.Done():
			return broker.FetchResult{}, ctx.Err()
		}
	}
}

func failed(res broker.FetchResult) bool {
	for _, p := range res.Partitions {
		if p.Err != nil {
			return true
		}
	}
	return false
}

func (f *fakeCore) fetchOnce(r broker.FetchRequest) (broker.FetchResult, int, chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var res broker.FetchResult
	total := 0
	wait := f.anyChange
	for _, fp := range r.Partitions {
		p, err := f.partition(fp.Topic, fp.Partition)
		out := broker.FetchedPartition{Topic: fp.Topic, Partition: fp.Partition, Err: err}
		if err == nil {
			out.HighWatermark, out.LogStart = p.next, p.start
			if fp.Offset < p.start || fp.Offset > p.next {
				out.Err = &broker.OutOfRangeError{Offset: fp.Offset, StartOffset: p.start, HighWatermark: p.next}
			}
			for _, b := range p.batches {
				info, _ := batch.ParseHeader(b)
				if out.Err != nil || info.NextOffset() <= fp.Offset {
					continue
				}
				if len(out.Batches) > 0 && len(out.Batches)+len(b) > fp.MaxBytes {
					break
				}
				out.Batches = append(out.Batches, b...)
			}
		}
		total += len(out.Batches)
		res.Partitions = append(res.Partitions, out)
	}
	f.outstanding += total
	f.maxOutstanding = max(f.maxOutstanding, f.outstanding)
	res.Release = func() {
		f.mu.Lock()
		f.outstanding -= total
		f.mu.Unlock()
	}
	return res, total, wait, nil
}

func (f *fakeCore) ListOffsetsIsolated(ctx context.Context, pr broker.Principal, topic string, ids []int32, spec int64, committed bool) ([]broker.PartitionOffset, error) {
	var out []broker.PartitionOffset
	for _, id := range ids {
		off, _, err := f.ListOffset(ctx, pr, topic, id, spec)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if p, _ := f.partition(topic, id); p != nil && committed && spec == broker.Latest && p.lastStable > 0 {
			off = p.lastStable
		}
		f.mu.Unlock()
		out = append(out, broker.PartitionOffset{Partition: id, Offset: off})
	}
	return out, nil
}

func (f *fakeCore) ListOffset(_ context.Context, _ broker.Principal, topic string, part int32, spec int64) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.partition(topic, part)
	if err != nil {
		return 0, 0, err
	}
	switch spec {
	case broker.Earliest:
		return p.start, -1, nil
	case broker.Latest:
		return p.next, -1, nil
	}
	for _, b := range p.batches {
		_, recs, _ := batch.Decode(b, 0)
		for _, r := range recs {
			if r.Timestamp >= spec {
				return r.Offset, r.Timestamp, nil
			}
		}
	}
	return -1, -1, nil
}

func (f *fakeCore) FetchOffsets(_ context.Context, _ broker.Principal, group string, _ []string) ([]offsets.Committed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.committed[group]), nil
}

func (f *fakeCore) CommitOffsets(_ context.Context, _ broker.Principal, group, _ string, _ int32, cs []offsets.Committed) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		i := slices.IndexFunc(f.committed[group], func(o offsets.Committed) bool { return o.Topic == c.Topic && o.Partition == c.Partition })
		if i < 0 {
			f.committed[group] = append(f.committed[group], c)
		} else {
			f.committed[group][i] = c
		}
	}
	return nil
}

func (f *fakeCore) ListGroups(context.Context, broker.Principal) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.committed)), nil
}

func (f *fakeCore) Lag(ctx context.Context, _ string, cs []offsets.Committed) []broker.GroupOffset {
	out := make([]broker.GroupOffset, len(cs))
	for i, c := range cs {
		out[i].Committed = c
		t, err := f.Topic(ctx, "", c.Topic)
		if err != nil || int(c.Partition) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[c.Partition]
		lag := offsets.Lag(c.Offset, p.LogStart, p.HighWatermark)
		out[i].Known, out[i].LogStart, out[i].HighWatermark, out[i].Lag, out[i].Trimmed = true, p.LogStart, p.HighWatermark, lag.Lag, lag.Trimmed
	}
	return out
}

// The groups: the fake's coordinator, every call allowed.
func (f *fakeCore) DescribeGroup(_ context.Context, _ broker.Principal, group string) (groups.GroupDescription, error) {
	return f.coord.Describe(group)
}

func (f *fakeCore) ListMemberGroups(ctx context.Context, p broker.Principal) ([]broker.GroupListing, error) {
	held, err := f.coord.List()
	if err != nil {
		return nil, err
	}
	committed, _ := f.ListGroups(ctx, p)
	var out []broker.GroupListing
	isHeld := map[string]bool{}
	for _, l := range held {
		isHeld[l.Group] = true
		out = append(out, broker.GroupListing{GroupListing: l})
	}
	for _, g := range committed {
		if !isHeld[g] {
			out = append(out, broker.GroupListing{GroupListing: groups.GroupListing{Group: g, State: groups.Empty}, OffsetsOnly: true})
		}
	}
	return out, nil
}

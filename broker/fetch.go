package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
)

const (
	// DefaultFetchBytes is a partition's share of a fetch when the
	// request names none.
	DefaultFetchBytes = 1 << 20
	// MaxFetchBytes bounds one fetch response (and a partition's share).
	MaxFetchBytes = 16 << 20
	// readBudgetBytes bounds the memory of all fetch responses being read
	// or sent at once (see FetchResult); fetches beyond it wait.
	readBudgetBytes = 128 << 20
	// MaxWait bounds a fetch's long poll.
	MaxWait = 5 * time.Minute
)

// MemBudget is a bound on memory held by readers at once.
type MemBudget struct {
	*semaphore.Weighted
	Bytes int64
}

// NewMemBudget is a budget of n bytes.
func NewMemBudget(n int64) *MemBudget { return &MemBudget{semaphore.NewWeighted(n), n} }

// releaser returns a function that gives n held bytes back, once however
// often it is called: an answer's Release.
func (m *MemBudget) releaser(n int64) func() {
	var once sync.Once
	return func() { once.Do(func() { m.Release(n) }) }
}

// FetchPartition is one partition a fetch reads, from Offset, at most
// MaxBytes (0: DefaultFetchBytes; capped at MaxFetchBytes) unless its
// first batch is larger.
type FetchPartition struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int
}

// FetchRequest reads many partitions, long-polling until MinBytes are
// there or MaxWait passes (0: answer at once; capped at MaxWait).
type FetchRequest struct {
	Principal  Principal
	Partitions []FetchPartition
	MinBytes   int // at least 1 byte is waited for when MaxWait > 0
	MaxBytes   int // the whole response; 0: MaxFetchBytes
	MaxWait    time.Duration
	// Decode says the caller decodes the records, copying them: the read
	// budget charges as much again.
	Decode bool
	// ReadCommitted stops each partition's read at its last stable offset
	// and lists the aborted transactions of what it returns (Kafka's
	// isolation level read_committed; docs/transactions.md).
	ReadCommitted bool
	// DropAborted (with ReadCommitted) also leaves out the markers and the
	// batches of aborted transactions, whose Aborted list is then empty:
	// logd's own readers (gRPC, HTTP) ask for this, Kafka clients drop
	// them themselves.
	DropAborted bool
}

// FetchedPartition is one partition's answer. Batches are whole stored
// batches, never re-encoded: at least one when any exists at the offset,
// even over MaxBytes.
type FetchedPartition struct {
	Topic     string
	Partition int32
	Err       error // ErrUnknownTopic, *NotLeaderError, *OutOfRangeError, ...
	Batches   []byte
	// NextOffset is the offset after the last batch (the request's offset
	// when there is none); Records the records in Batches.
	NextOffset              int64
	Records                 int
	HighWatermark, LogStart int64
	// LastStable and Aborted: with ReadCommitted only, the partition's
	// last stable offset and the aborted transactions Batches may hold.
	LastStable int64
	Aborted    []AbortedTxn
}

// FetchResult is a fetch's answer; Release returns its memory to the read
// budget once it is sent, or once the caller accounts for it elsewhere
// (safe to call more than once). Holding it while waiting on a client
// keeps other reads of the node waiting.
type FetchResult struct {
	Partitions []FetchedPartition
	Release    func()
}

// fetchTarget is a partition a fetch reads, resolved.
type fetchTarget struct {
	p        *partition.Partition
	offset   int64
	maxBytes int
}

// Fetch reads committed batches of many partitions. A partition that
// cannot be read has its Err set; the others are read. It waits (up to
// r.MaxWait) while fewer than r.MinBytes are there, for a commit to any
// of the partitions, the context's end or the broker's shutdown.
func (b *Broker) Fetch(ctx context.Context, r FetchRequest) (FetchResult, error) {
	if err := b.enter(); err != nil {
		return FetchResult{}, err
	}
	defer b.leave()
	targets := make([]*fetchTarget, len(r.Partitions))
	denied := map[string]error{} // per topic: checked (and audited) once
	res := make([]FetchedPartition, len(r.Partitions))
	for i, fp := range r.Partitions {
		res[i] = FetchedPartition{Topic: fp.Topic, Partition: fp.Partition, NextOffset: fp.Offset}
		// A partition of a topic p may not read is answered with the
		// denial; the others are read.
		if res[i].Err = b.authorizeRead(ctx, r.Principal, fp.Topic, denied); res[i].Err != nil {
			continue
		}
		targets[i], res[i].Err = b.target(ctx, fp.Topic, fp.Partition, fp.Offset, fp.MaxBytes)
	}
	wait := min(r.MaxWait, MaxWait)
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	final := false // the wait is over: answer what the next read finds
	for {
		changed := b.changedAny(targets)
		n, release, err := b.readAll(ctx, r, targets, res)
		if err != nil {
			return FetchResult{}, err
		}
		if final || n >= max(r.MinBytes, 1) || wait == 0 || !anyTarget(targets) {
			return FetchResult{Partitions: res, Release: release}, nil
		}
		// A fetch that waits holds none of the read budget (a long poll
		// must not keep others' reads waiting): what it read is dropped
		// and read again when it wakes.
		release()
		forget(targets, res)
		woke, err := b.await(ctx, changed, timeout)
		if err != nil {
			return FetchResult{}, err
		}
		if !woke {
			select {
			case <-b.shutdown:
				return FetchResult{Partitions: res, Release: func() {}}, nil
			default:
			}
			final = true
			continue
		}
		b.recheck(targets, res)
	}
}

// forget drops what a read found, leaving each partition as though it had
// nothing to read yet.
func forget(targets []*fetchTarget, res []FetchedPartition) {
	for i, t := range targets {
		if t != nil && res[i].Err == nil {
			res[i].Batches, res[i].Records, res[i].NextOffset = nil, 0, t.offset
		}
	}
}

// await waits for a commit to one of a fetch's partitions (true), its
// max wait or the broker's shutdown (false), or the context's end.
func (b *Broker) await(ctx context.Context, changed *anyChanged, timeout <-chan time.Time) (bool, error) {
	c := changed.c()
	defer changed.stop()
	select {
	case <-c:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-b.shutdown:
		return false, nil
	}
}

func anyTarget(targets []*fetchTarget) bool {
	for _, t := range targets {
		if t != nil {
			return true
		}
	}
	return false
}

// recheck fails the targets whose partition is no longer served under its
// name (deleted, or deleted and created again).
func (b *Broker) recheck(targets []*fetchTarget, res []FetchedPartition) {
	for i, t := range targets {
		if t == nil {
			continue
		}
		if err := b.stillServed(t.p); err != nil {
			targets[i], res[i].Err = nil, err
		}
	}
}

// readAll reads every target under the read budget into res and returns
// the bytes read. The budget for the whole response is taken at once
// (what the read allocates: its buffers, and as much again with decode)
// and what is not used is returned; rel returns the rest once the
// response is sent.
func (b *Broker) readAll(ctx context.Context, r FetchRequest, targets []*fetchTarget, res []FetchedPartition) (int, func(), error) {
	total := r.MaxBytes
	if total <= 0 || total > MaxFetchBytes {
		total = MaxFetchBytes
	}
	var asked int
	for _, t := range targets {
		if t != nil {
			asked += t.maxBytes
		}
	}
	want := int64(min(asked, total))
	if r.Decode {
		want *= 2 // decoded records copy what they hold
	}
	want = min(want, b.budget.Bytes)
	if want > 0 {
		if err := b.budget.Acquire(ctx, want); err != nil {
			return 0, nil, err
		}
	}
	n, used := 0, int64(0)
	for i, t := range targets {
		if t == nil || res[i].Err != nil {
			continue
		}
		left := total - n
		if left <= 0 && n > 0 {
			break
		}
		fp, err := b.readAt(t.p, t.offset, min(t.maxBytes, max(left, 1)), nil)
		dropped := 0
		switch {
		case err == nil && r.ReadCommitted && r.DropAborted:
			dropped, err = readCommittedNative(t.p, t.offset, &fp)
		case err == nil && r.ReadCommitted:
			err = readCommitted(t.p, t.offset, &fp)
		}
		if err != nil {
			// Final: the partition is not read again.
			targets[i], res[i].Err = nil, err
			continue
		}
		fp.Err = nil
		res[i] = fp
		// Dropped batches count as read: the fetch answers at once, its
		// NextOffset past them, rather than waiting on what is there.
		n += len(fp.Batches) + dropped
		used += int64(cap(fp.Batches))
		if r.Decode {
			used += int64(len(fp.Batches))
		}
	}
	used = min(used, want)
	b.budget.Release(want - used)
	return n, b.budget.releaser(used), nil
}

// anyChanged is closed at the next commit to any of a fetch's partitions.
// Their Changed channels are taken before a read (so no commit after it
// is missed); goroutines to merge them start only when the fetch waits on
// more than one.
type anyChanged struct {
	chans []<-chan struct{}
	quit  chan struct{}
}

// changedAny takes the targets' Changed channels.
func (b *Broker) changedAny(targets []*fetchTarget) *anyChanged {
	a := &anyChanged{}
	for _, t := range targets {
		if t != nil {
			a.chans = append(a.chans, t.p.Log.Changed())
		}
	}
	return a
}

// c is a channel closed at the first of the commits: the one partition's
// own, or one merged by a goroutine each, which stop ends.
func (a *anyChanged) c() <-chan struct{} {
	if len(a.chans) == 1 {
		return a.chans[0]
	}
	c := make(chan struct{})
	a.quit = make(chan struct{})
	var once sync.Once
	for _, ch := range a.chans {
		go func() {
			select {
			case <-ch:
				once.Do(func() { close(c) })
			case <-a.quit:
			}
		}()
	}
	return c
}

func (a *anyChanged) stop() {
	if a.quit != nil {
		close(a.quit)
	}
}

// target resolves a partition a fetch or live tail reads. In a cluster
// only the leader serves reads (a follower may lag behind what was
// acknowledged), and a read that may come back empty first confirms the
// leadership (cluster.Linearizable) so it cannot miss a record another
// leader acknowledged.
func (b *Broker) target(ctx context.Context, topic string, part int32, offset int64, maxBytes int) (*fetchTarget, error) {
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return nil, b.topicLookup(ctx, topic, err)
	}
	if err := b.plane.readable(ctx, p, offset); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, kind.Errorf(kind.ErrInvalidArgument, "fetch: offset must be >= 0, got %d (resolve earliest/latest with ListOffsets)", offset)
	}
	switch {
	case maxBytes < 0:
		return nil, kind.Errorf(kind.ErrInvalidArgument, "fetch: max_bytes must be >= 0, got %d", maxBytes)
	case maxBytes == 0:
		maxBytes = DefaultFetchBytes
	}
	return &fetchTarget{p: p, offset: offset, maxBytes: min(maxBytes, MaxFetchBytes)}, nil
}

// readAt reads what is committed at offset, into buf when it is large
// enough (see log.ReadInto). The high watermark reads as empty (the
// caller may wait for the next record); offsets below the log start or
// past the high watermark are *OutOfRangeError.
func (b *Broker) readAt(p *partition.Partition, offset int64, maxBytes int, buf []byte) (FetchedPartition, error) {
	l := p.Log
	fp := FetchedPartition{Topic: p.Topic, Partition: p.ID, NextOffset: offset}
	start, hw := l.StartOffset(), l.HighWatermark()
	fp.LogStart, fp.HighWatermark = start, hw
	if offset < start || offset > hw {
		// At hw the reader waits for the next record; past it, for
		// offsets the log has not given out.
		return fp, &log.OutOfRangeError{Offset: offset, StartOffset: start, HighWatermark: hw}
	}
	if offset == hw {
		return fp, nil
	}
	data, err := l.ReadInto(buf, offset, maxBytes)
	if errors.Is(err, log.ErrClosed) {
		if live := b.stillServed(p); live != nil {
			return fp, live
		}
	}
	if err != nil {
		var oor *log.OutOfRangeError
		if errors.As(err, &oor) && offset >= oor.HighWatermark && offset >= oor.StartOffset {
			return fp, nil
		}
		return fp, err
	}
	err = batch.Split(data, func(one []byte, info batch.Info) error {
		fp.NextOffset = info.NextOffset()
		fp.Records += int(info.NumRecords)
		return nil
	})
	if err != nil {
		return fp, kind.Errorf(log.ErrCorrupt, "fetch %s at offset %d: stored batch unreadable: %v", p.Name(), offset, err)
	}
	fp.Batches = data
	b.m.fetchRecords.WithLabelValues(p.Topic).Add(float64(fp.Records))
	b.m.fetchBytes.WithLabelValues(p.Topic).Add(float64(len(data)))
	return fp, nil
}

// stillServed reports whether p is still the partition served under its
// name: a log closes when its topic is deleted (and wakes its waiters),
// and a recreated topic is a different partition.
func (b *Broker) stillServed(p *partition.Partition) error {
	cur, err := b.topics.Partition(p.Topic, p.ID)
	if err != nil {
		return err
	}
	if cur != p {
		return kind.Errorf(ErrUnknownTopic, "topic %q was deleted and created again while this request waited: start again from a position in the new topic", p.Topic)
	}
	return nil
}

// topicLookup answers a request for a topic this node does not have: on a
// single node it does not exist; in a cluster see cluster.TopicLookup.
func (b *Broker) topicLookup(ctx context.Context, topic string, err error) error {
	return b.plane.topicLookup(ctx, topic, err)
}

// Changed returns a channel closed at the partition's next commit.
func (b *Broker) Changed(topic string, part int32) (<-chan struct{}, error) {
	p, err := b.topics.Partition(topic, part)
	if err != nil {
		return nil, err
	}
	return p.Log.Changed(), nil
}

package partition

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// maxProducers bounds the idempotence state kept per partition; the least
// recently used producer is forgotten first (its retries are then accepted
// as new, like an unknown producer's).
const (
	maxProducers      = 10000
	rememberedBatches = 5
	recoveryReadBytes = 1 << 20
)

// Partition is one partition of a topic: its log and its producers'
// deduplication state.
type Partition struct {
	Topic string
	ID    int32
	Log   *log.Log

	mu        sync.Mutex // guards producers
	producers map[int64]*producerState
}

type producerState struct {
	// appendMu is held across a producer's append, so that its batches go
	// in order; the fields below are guarded by the partition's mu (Observe
	// updates them while an append holds appendMu).
	appendMu sync.Mutex
	epoch    int16
	lastSeq  int32 // sequence of the last record appended
	recent   []appendedBatch
	lastUsed time.Time
}

type appendedBatch struct {
	firstSeq, lastSeq int32
	base, last        int64
}

// AppendResult is where a batch landed.
type AppendResult struct {
	BaseOffset, LastOffset int64
	// Duplicate: the batch had been appended before; the offsets are the
	// original ones (-1 when too old to be remembered).
	Duplicate bool
}

func newPartition(topic string, id int32, l *log.Log) *Partition {
	p := &Partition{Topic: topic, ID: id, Log: l, producers: make(map[int64]*producerState)}
	return p
}

// Name is "topic-partition", as in the data directory.
func (p *Partition) Name() string { return fmt.Sprintf("%s-%d", p.Topic, p.ID) }

// Append appends one verified batch (see batch.Verify), deduplicating
// idempotent producers' retries. b is modified in place by the log.
func (p *Partition) Append(b []byte, info batch.Info) (AppendResult, error) {
	return p.AppendVia(b, info, p.Log.Append)
}

// AppendVia is Append through another path to the log (a replicated
// partition appends through Raft): write stores b and returns its header
// with the offsets it got. The producer's state is checked before write and
// updated after it; a producer's batches are written one at a time.
func (p *Partition) AppendVia(b []byte, info batch.Info, write func([]byte) (batch.Info, error)) (AppendResult, error) {
	if info.ProducerID < 0 {
		got, err := write(b)
		if err != nil {
			return AppendResult{}, err
		}
		return AppendResult{BaseOffset: got.BaseOffset, LastOffset: got.LastOffset()}, nil
	}
	st := p.producer(info.ProducerID)
	st.appendMu.Lock()
	defer st.appendMu.Unlock()
	firstSeq := info.FirstSequence
	lastSeq := firstSeq + info.LastOffsetDelta
	if res, err, done := p.checkSequence(st, info, firstSeq, lastSeq); done {
		return res, err
	}
	got, err := write(b)
	if err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{BaseOffset: got.BaseOffset, LastOffset: got.LastOffset()}
	p.mu.Lock()
	// A replicated append may have been Observed already, as Raft applied it.
	if !(st.epoch == info.ProducerEpoch && st.lastSeq >= lastSeq) {
		st.remember(info.ProducerEpoch, appendedBatch{firstSeq, lastSeq, res.BaseOffset, res.LastOffset})
	}
	p.mu.Unlock()
	return res, nil
}

// checkSequence answers a batch that must not be written: a retry of a
// remembered batch, an old one, a fenced epoch or a sequence gap.
func (p *Partition) checkSequence(st *producerState, info batch.Info, firstSeq, lastSeq int32) (AppendResult, error, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := st.lastSeq >= 0
	if known && info.ProducerEpoch < st.epoch {
		return AppendResult{}, fmt.Errorf("%w: producer %d epoch %d is older than epoch %d", ErrOutOfOrderSequence, info.ProducerID, info.ProducerEpoch, st.epoch), true
	}
	if known && info.ProducerEpoch == st.epoch {
		for _, r := range st.recent {
			if r.firstSeq == firstSeq && r.lastSeq == lastSeq {
				return AppendResult{BaseOffset: r.base, LastOffset: r.last, Duplicate: true}, nil, true
			}
		}
		if firstSeq <= st.lastSeq {
			return AppendResult{BaseOffset: -1, LastOffset: -1, Duplicate: true}, nil, true
		}
		if firstSeq != st.lastSeq+1 {
			return AppendResult{}, fmt.Errorf("%w: producer %d sent sequence %d, expected %d: resend the earlier batches first",
				ErrOutOfOrderSequence, info.ProducerID, firstSeq, st.lastSeq+1), true
		}
	}
	return AppendResult{}, nil, false
}

// Observe records a batch appended to the log by another path: a
// replicated partition's batches as Raft applies them on every replica, so
// that a replica that becomes leader knows its producers. A batch the state
// already holds is ignored.
func (p *Partition) Observe(info batch.Info) {
	if info.ProducerID < 0 {
		return
	}
	st := p.producer(info.ProducerID)
	p.mu.Lock()
	defer p.mu.Unlock()
	lastSeq := info.FirstSequence + info.LastOffsetDelta
	if st.lastSeq >= 0 && info.ProducerEpoch == st.epoch && lastSeq <= st.lastSeq {
		return
	}
	if st.lastSeq >= 0 && info.ProducerEpoch < st.epoch {
		return
	}
	st.remember(info.ProducerEpoch, appendedBatch{info.FirstSequence, lastSeq, info.BaseOffset, info.LastOffset()})
}

// remember records an appended batch; p.mu is held.
func (st *producerState) remember(epoch int16, a appendedBatch) {
	if epoch != st.epoch {
		st.recent = st.recent[:0]
	}
	st.epoch = epoch
	st.lastSeq = a.lastSeq
	if len(st.recent) == rememberedBatches {
		copy(st.recent, st.recent[1:])
		st.recent = st.recent[:rememberedBatches-1]
	}
	st.recent = append(st.recent, a)
}

func (p *Partition) producer(id int64) *producerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.producers[id]
	if !ok {
		if len(p.producers) >= maxProducers {
			p.evictOldest()
		}
		st = &producerState{lastSeq: -1}
		p.producers[id] = st
	}
	st.lastUsed = time.Now()
	return st
}

func (p *Partition) evictOldest() {
	var oldID int64
	var oldest time.Time
	first := true
	for id, st := range p.producers {
		if first || st.lastUsed.Before(oldest) {
			oldID, oldest, first = id, st.lastUsed, false
		}
	}
	delete(p.producers, oldID)
}

// Producer state is rebuilt on open from recent batches: those of every
// segment written in the last producerMemory (a client retries a batch for
// its delivery timeout, two minutes by default), and at least the active
// segment and the one before, but no more than producerScanBytes of
// segments, which bounds the cost of opening a partition.
const (
	producerMemory    = 10 * time.Minute
	producerScanBytes = 256 << 20
)

// RebuildProducers rebuilds the producers' state from the log's recent
// batches, as at open: a replicated partition calls it when Raft restored a
// snapshot, whose batches it never saw applied.
func (p *Partition) RebuildProducers() error { return p.recoverProducers() }

// recoverProducers rebuilds the producers' state from the batches of the
// recent segments (see producerMemory). Reads are bounded (1 MiB at a time).
func (p *Partition) recoverProducers() error {
	segs := p.Log.Segments()
	if len(segs) == 0 {
		return nil
	}
	since := time.Now().Add(-producerMemory).UnixMilli()
	first := len(segs) - 1
	scanned := segs[first].Size
	for first > 0 {
		prev := segs[first-1]
		recent := prev.MaxTimestamp >= since || prev.Created.UnixMilli() >= since
		if first < len(segs)-1 && (!recent || scanned+prev.Size > producerScanBytes) {
			break
		}
		first--
		scanned += prev.Size
	}
	off := max(segs[first].BaseOffset, p.Log.StartOffset())
	hw := p.Log.HighWatermark()
	for off < hw {
		b, err := p.Log.Read(off, recoveryReadBytes)
		if err != nil {
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				return nil
			}
			return fmt.Errorf("partition %s: rebuild producer state: %w", p.Name(), err)
		}
		if len(b) == 0 {
			return nil
		}
		err = batch.Split(b, func(_ []byte, info batch.Info) error {
			off = info.NextOffset()
			p.Observe(info)
			return nil
		})
		if err != nil {
			return fmt.Errorf("partition %s: rebuild producer state: %w", p.Name(), err)
		}
	}
	return nil
}

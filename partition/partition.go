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
	mu       sync.Mutex // held across a producer's append: its batches go in order
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
	if info.ProducerID < 0 {
		got, err := p.Log.Append(b)
		if err != nil {
			return AppendResult{}, err
		}
		return AppendResult{BaseOffset: got.BaseOffset, LastOffset: got.LastOffset()}, nil
	}
	st := p.producer(info.ProducerID)
	st.mu.Lock()
	defer st.mu.Unlock()
	firstSeq := info.FirstSequence
	lastSeq := firstSeq + info.LastOffsetDelta
	known := st.lastSeq >= 0
	if known && info.ProducerEpoch < st.epoch {
		return AppendResult{}, fmt.Errorf("%w: producer %d epoch %d is older than epoch %d", ErrOutOfOrderSequence, info.ProducerID, info.ProducerEpoch, st.epoch)
	}
	if known && info.ProducerEpoch == st.epoch {
		for _, r := range st.recent {
			if r.firstSeq == firstSeq && r.lastSeq == lastSeq {
				return AppendResult{BaseOffset: r.base, LastOffset: r.last, Duplicate: true}, nil
			}
		}
		if firstSeq <= st.lastSeq {
			return AppendResult{BaseOffset: -1, LastOffset: -1, Duplicate: true}, nil
		}
		if firstSeq != st.lastSeq+1 {
			return AppendResult{}, fmt.Errorf("%w: producer %d sent sequence %d, expected %d: resend the earlier batches first",
				ErrOutOfOrderSequence, info.ProducerID, firstSeq, st.lastSeq+1)
		}
	}
	got, err := p.Log.Append(b)
	if err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{BaseOffset: got.BaseOffset, LastOffset: got.LastOffset()}
	st.remember(info.ProducerEpoch, appendedBatch{firstSeq, lastSeq, res.BaseOffset, res.LastOffset})
	return res, nil
}

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
			if info.ProducerID >= 0 {
				st := p.producer(info.ProducerID)
				st.remember(info.ProducerEpoch, appendedBatch{
					info.FirstSequence, info.FirstSequence + info.LastOffsetDelta, info.BaseOffset, info.LastOffset()})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("partition %s: rebuild producer state: %w", p.Name(), err)
		}
	}
	return nil
}

package partition

import (
	"sort"

	"github.com/logd/logd/internal/batch"
)

// ProducerInfo is one producer's state in a partition, as Kafka's
// DescribeProducers answers it (KIP-664).
type ProducerInfo struct {
	ProducerID int64
	// Epoch is the producer's epoch here: its last batch's, or the newer
	// one of a marker the coordinator wrote for it; -1 when the partition
	// knows only its open transaction (its state was evicted).
	Epoch int16
	// LastSequence is the sequence of its last record (-1: none in Epoch).
	LastSequence int32
	// LastTimestamp is the largest timestamp of its last batch, read from
	// the log (-1 when that batch is no longer stored, not yet below the
	// high watermark, or past the read budget of Producers).
	LastTimestamp int64
	// TxnStartOffset is the first offset of its open transaction here (-1
	// when none is open).
	TxnStartOffset int64
	// CoordinatorEpoch is the coordinator-epoch field of its last marker
	// applied here, as Kafka answers it: logd's coordinator writes the
	// transaction's number there (marker.go). -1 when no numbered marker
	// of it is known here.
	CoordinatorEpoch int32
}

// describeReadBudget bounds the bytes Producers reads from the log for the
// producers' last timestamps: one batch each, whole, until the budget is
// spent; later producers' timestamps are -1.
const describeReadBudget = 16 << 20

// Producers is the partition's producers (the idempotence state kept for
// deduplication, and every producer with a transaction open here), by
// producer id. It only reads the state: a describe changes nothing a
// write checks.
func (p *Partition) Producers() []ProducerInfo {
	type known struct {
		info ProducerInfo
		last int64 // offset of its last batch remembered, -1 none
	}
	p.mu.Lock()
	ks := make([]known, 0, len(p.producers))
	for id, st := range p.producers {
		k := known{info: ProducerInfo{ProducerID: id, Epoch: st.epoch, LastSequence: st.lastSeq, TxnStartOffset: -1, CoordinatorEpoch: -1}, last: -1}
		if st.markerTxn > 0 {
			k.info.CoordinatorEpoch = st.markerTxn
		}
		if st.fence > st.epoch {
			// A marker of a newer epoch: the producer's sequence starts
			// again in it.
			k.info.Epoch, k.info.LastSequence = st.fence, -1
		} else if n := len(st.recent); n > 0 {
			k.last = st.recent[n-1].last
		}
		ks = append(ks, k)
	}
	p.mu.Unlock()

	open := p.openTxns()
	seen := make(map[int64]bool, len(ks))
	for i := range ks {
		id := ks[i].info.ProducerID
		seen[id] = true
		if first, ok := open[id]; ok {
			ks[i].info.TxnStartOffset = first
		}
	}
	for id, first := range open {
		if !seen[id] {
			ks = append(ks, known{info: ProducerInfo{ProducerID: id, Epoch: -1, LastSequence: -1, TxnStartOffset: first, CoordinatorEpoch: -1}, last: -1})
		}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].info.ProducerID < ks[j].info.ProducerID })

	out := make([]ProducerInfo, len(ks))
	budget := describeReadBudget
	for i, k := range ks {
		out[i] = k.info
		out[i].LastTimestamp = -1
		if k.last >= 0 && budget > 0 {
			var n int
			out[i].LastTimestamp, n = p.batchTimestamp(k.last)
			budget -= n
		}
	}
	return out
}

// openTxns is a copy of the open transactions' first offsets, by
// producer id.
func (p *Partition) openTxns() map[int64]int64 {
	t := &p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]int64, len(t.open))
	for id, first := range t.open {
		out[id] = first
	}
	return out
}

// batchTimestamp is the largest timestamp of the stored batch holding
// offset, and the bytes read; -1 when it cannot be read.
func (p *Partition) batchTimestamp(offset int64) (int64, int) {
	b, err := p.Log.Read(offset, 1)
	if err != nil || len(b) == 0 {
		return -1, 0
	}
	info, err := batch.ParseHeader(b)
	if err != nil || offset < info.BaseOffset || offset > info.LastOffset() {
		return -1, len(b)
	}
	return info.MaxTimestamp, len(b)
}

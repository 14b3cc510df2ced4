package partition

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/logd/logd/internal/batch"
)

// AbortedTxn is an aborted transaction's span in a partition: its
// producer's records from FirstOffset up to its ABORT marker at
// LastOffset are not to be read by read_committed consumers (Kafka's
// FetchResponse AbortedTransactions).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// txnState is a partition's transactions: the first offset of each
// producer's open transaction, and the aborted ones, by LastOffset. It is
// kept as batches are written (single node) or applied (every replica,
// before the high watermark moves past them), and rebuilt at open from
// the batches recoverProducers reads.
type txnState struct {
	mu      sync.Mutex
	open    map[int64]int64 // producer id -> first offset
	aborted []AbortedTxn
	// next is the offset after the last batch tracked: Raft applies the
	// entries after its last snapshot again when a replica restarts, after
	// the open rebuilt the state from the log, and a batch tracked once
	// must change nothing the second time (an ABORT marker applied again
	// would end the producer's next transaction, listing a span that
	// starts after its own end).
	next  int64
	nOpen atomic.Int32 // len(open): LastStable's fast path

	// fileMu orders the aborted-transaction index's writes (txnindex.go);
	// loading is set while recoverProducers rebuilds the state, which
	// writes the index once at its end.
	fileMu  sync.Mutex
	loading bool
}

// trackTxn records a transactional batch (a no-op for others): a data
// batch opens its producer's transaction here unless one is open, a
// marker ends it (an ABORT marker lists it as aborted). b is the batch
// (a marker's type is in its record); info carries its offsets.
func (p *Partition) trackTxn(info batch.Info, b []byte) {
	if !info.IsTransactional() {
		return
	}
	if info.IsControl() && info.ProducerID >= 0 && !p.applyMarker(info, b) {
		return // a copy of a marker applied already (marker.go)
	}
	if p.trackTxnLocked(info, b) {
		// An abort outlives the segments the open rescans: keep it in
		// the index. A failed write is retried at the next abort and
		// at open; the marker itself is in the log meanwhile.
		_ = p.saveTxnIndex()
	}
}

// trackTxnLocked is trackTxn's change of state; it reports whether an
// abort was listed and the index file is to be written.
func (p *Partition) trackTxnLocked(info batch.Info, b []byte) bool {
	t := &p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	if info.BaseOffset < t.next {
		return false // tracked already
	}
	t.next = info.NextOffset()
	first, open := t.open[info.ProducerID]
	if !info.IsControl() {
		if !open {
			if t.open == nil {
				t.open = map[int64]int64{}
			}
			t.open[info.ProducerID] = info.BaseOffset
			t.nOpen.Store(int32(len(t.open)))
		}
		return false
	}
	if !open {
		return false // no record of the transaction here: nothing to hide
	}
	delete(t.open, info.ProducerID)
	t.nOpen.Store(int32(len(t.open)))
	if commit, err := batch.ControlCommit(b); err == nil && !commit {
		start := p.Log.StartOffset()
		t.aborted = slices.DeleteFunc(t.aborted, func(a AbortedTxn) bool { return a.LastOffset < start })
		t.aborted = append(t.aborted, AbortedTxn{ProducerID: info.ProducerID, FirstOffset: first, LastOffset: info.BaseOffset})
		return !t.loading
	}
	return false
}

// LastStable is the partition's last stable offset: the first offset of
// its oldest open transaction, or the high watermark when none is open
// (or the open one starts above it). read_committed reads stop there.
func (p *Partition) LastStable() int64 {
	hw := p.Log.HighWatermark()
	t := &p.txn
	if t.nOpen.Load() == 0 {
		return hw
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lso := hw
	for _, first := range t.open {
		lso = min(lso, first)
	}
	return lso
}

// Aborted lists the aborted transactions whose records may lie in
// [from, to): those that end at or after from and begin before to.
func (p *Partition) Aborted(from, to int64) []AbortedTxn {
	t := &p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []AbortedTxn
	for _, a := range t.aborted {
		if a.LastOffset >= from && a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// Applied records a batch a replicated partition applied (Raft's state
// machine, on every replica, before the high watermark moves past it):
// its transaction state (trackTxn), then its producer's (Observe).
func (p *Partition) Applied(info batch.Info, b []byte) {
	p.trackTxn(info, b)
	p.Observe(info)
}

// reset forgets every transaction (before a rebuild from the log).
func (t *txnState) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open, t.aborted, t.next = nil, nil, 0
	t.nOpen.Store(0)
	t.loading = true
}

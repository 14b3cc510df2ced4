package log

import (
	"fmt"
	"slices"

	"github.com/logd/logd/internal/batch"
)

// Transactions in a compacted log (Kafka's cleaner's rules).
//
// The caller bounds a compaction below the partition's last stable
// offset, so every transactional record the cleaner sees belongs to a
// transaction that has ended, and passes the aborted ones
// (CompactOptions.Aborted, the partition's aborted-transaction index):
//
//   - a record of an aborted transaction never enters the key map (it
//     must not make the clean remove an older committed record of its
//     key) and is removed by the first clean that reaches it;
//   - a transactional batch none of whose records is left stays an empty
//     batch (its producer's dedup state) until its segment's delete
//     horizon has passed; then it becomes a compacted entry;
//   - a COMMIT marker (control batch) goes once its segment's delete
//     horizon has passed and no batch of its transaction is left below
//     it: the rewrite goes through the segments in offset order and, per
//     producer, notes whether it wrote a batch of the producer's current
//     transaction since its last marker; a marker whose transaction left
//     one stays. A marker never goes before its records: a transactional
//     batch without its marker would open a transaction again when a node
//     rebuilds the partition's transactions from the log, and the last
//     stable offset would stop there;
//   - an ABORT marker stays: the partition's aborted-transaction index
//     keeps listing its transaction to read_committed fetches, and a
//     Kafka client drops the producer's batches from the transaction's
//     first offset until it reads the ABORT marker, so without it the
//     client would drop the producer's later, committed, batches too.
//     (Kafka's cleaner removes an ABORT marker together with its entry in
//     the segment's transaction index.)
//
// Segments are swapped in offset order, each fsynced and its directory
// synced before the next is written, so a crash leaves a transaction's
// batches removed and its marker still there at worst, which is a marker
// ending nothing. When the pass cannot know every batch below a marker (a
// segment it did not read, a batch that does not decode, a segment it
// could not swap in), it keeps every marker.

// AbortedSpan is an aborted transaction's span in a partition: its
// producer's records from FirstOffset up to its ABORT marker at
// LastOffset (the fields of partition.AbortedTxn).
type AbortedSpan struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// abortedSet looks up whether a producer's batch lies in one of its
// aborted spans.
type abortedSet map[int64][]AbortedSpan // producer id -> spans by FirstOffset

func newAbortedSet(spans []AbortedSpan) abortedSet {
	if len(spans) == 0 {
		return nil
	}
	a := abortedSet{}
	for _, s := range spans {
		a[s.ProducerID] = append(a[s.ProducerID], s)
	}
	for _, l := range a {
		slices.SortFunc(l, func(x, y AbortedSpan) int { return cmpInt64(x.FirstOffset, y.FirstOffset) })
	}
	return a
}

// has reports whether info is a transactional data batch of an aborted
// transaction.
func (a abortedSet) has(info batch.Info) bool {
	if !info.IsTransactional() || info.IsControl() || len(a) == 0 {
		return false
	}
	l := a[info.ProducerID]
	i, _ := slices.BinarySearchFunc(l, info.BaseOffset, func(s AbortedSpan, off int64) int {
		return cmpInt64(s.FirstOffset, off)
	})
	// l[i-1] is the last span starting at or before the batch (i is the
	// first starting after it, or one starting at it).
	if i < len(l) && l[i].FirstOffset == info.BaseOffset {
		return true
	}
	return i > 0 && info.BaseOffset <= l[i-1].LastOffset
}

// txnTrack is what a pass's rewrite knows of the transactions it went
// through, in offset order.
type txnTrack struct {
	// written: a batch of the producer's transaction since its last
	// marker was written (kept, rewritten or emptied).
	written map[int64]bool
	// unsure: the pass missed a batch; it keeps every marker.
	unsure bool
}

// wroteData notes a transactional data batch the rewrite wrote (not
// replaced by a compacted entry).
func (t *txnTrack) wroteData(info batch.Info) {
	if !info.IsTransactional() {
		return
	}
	if t.written == nil {
		t.written = map[int64]bool{}
	}
	t.written[info.ProducerID] = true
}

// markerGoes reports whether the marker info (a COMMIT marker when
// commit), in a segment past its delete horizon when pastHorizon, is
// removed, and ends its transaction.
func (t *txnTrack) markerGoes(info batch.Info, commit, pastHorizon bool) bool {
	left := t.written[info.ProducerID]
	delete(t.written, info.ProducerID)
	return commit && pastHorizon && !left && !t.unsure && info.ProducerID >= 0
}

// cleanTxnBatch is cleanBatch for a marker or a batch of an aborted
// transaction: done reports it handled the batch.
func (c *compaction) cleanTxnBatch(dst, raw []byte, e *entryInfo, info batch.Info, recs []batch.Record) (_ []byte, changed, done bool) {
	switch {
	case info.IsControl():
		commit, err := batch.ControlCommit(raw)
		if err != nil {
			c.txn.unsure = true // of which transaction it ends
			return append(dst, raw...), false, true
		}
		if c.txn.markerGoes(info, commit, c.pastHorizon) {
			c.res.Removed++
			c.res.RecordsRemoved += int64(len(recs))
			return appendCompacted(dst, e.baseOffset, e.epoch, e.nextOffset), true, true
		}
		if commit && !c.pastHorizon {
			c.markers = true // it may go at the horizon
		}
		return append(dst, raw...), false, true
	case c.aborted.has(info):
		if len(recs) == 0 && !c.pastHorizon {
			c.txn.wroteData(info)
			return append(dst, raw...), false, true
		}
		return c.dropAll(dst, e, info, recs)
	}
	return dst, false, false
}

// dropAll writes the batch info (entry e) without any of its records: an
// empty batch keeping its producer's fields until its segment's horizon
// for a transactional one, for good for an idempotent one; a compacted
// entry otherwise.
func (c *compaction) dropAll(dst []byte, e *entryInfo, info batch.Info, recs []batch.Record) (_ []byte, changed, done bool) {
	if info.ProducerID < 0 || info.IsTransactional() && c.pastHorizon {
		c.res.Removed++
		c.res.RecordsRemoved += int64(len(recs))
		return appendCompacted(dst, e.baseOffset, e.epoch, e.nextOffset), true, true
	}
	dst, err := batch.Rewrite(dst, info, nil)
	if err != nil {
		c.err = fmt.Errorf("offset %d: %w", e.baseOffset, err)
		return dst, false, true
	}
	c.txn.wroteData(info)
	c.res.RecordsRemoved += int64(len(recs))
	return dst, true, true
}

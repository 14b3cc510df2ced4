package torture

import (
	"fmt"
)

// txnRef locates one record of a transaction.
type txnRef struct {
	txn *TxnOp
	w   int // index in txn.Writes
}

// txnIndex indexes a TxnHistory for CheckTxn.
type txnIndex struct {
	h       *TxnHistory
	byValue map[string]txnRef
	// seen is, per value, the offset reads returned it at.
	seen map[string]int64
	// visible holds the transactions some read returned a record of.
	visible map[*TxnOp]bool
}

// CheckTxn judges a transactional workload's history:
//   - no read_committed read returns a record of a transaction that did
//     not commit (aborted, or abandoned unfinished) or of no transaction;
//   - a transaction that committed (or whose records some read returned)
//     is visible whole: every read of one of its partitions that covered
//     its record's offset (below the LSO the reader saw) returned it, and
//     the final reads hold all its records, each once;
//   - a group offset committed in a transaction is read only if the
//     transaction may have committed, and once a commit is acknowledged
//     no later read returns an older offset;
//   - a producer instance fenced by a newer one of its transactional id
//     never gets a write or a commit acknowledged after the fence.
func CheckTxn(h *TxnHistory) *Verdict {
	v := newVerdict("txn")
	x := &txnIndex{h: h, byValue: map[string]txnRef{}, seen: map[string]int64{}, visible: map[*TxnOp]bool{}}
	for i := range h.Txns {
		t := &h.Txns[i]
		v.Counts["txn_"+txnKind(t)+"_"+string(t.Outcome)]++
		for j, w := range t.Writes {
			if prev, dup := x.byValue[w.Value]; dup {
				v.fail(nil, "value %q written by transactions %s and %s", w.Value, prev.txn.ID, t.ID)
			}
			x.byValue[w.Value] = txnRef{t, j}
		}
	}
	v.Counts["reads"] = len(h.Reads)
	x.checkReads(v)
	x.checkWhole(v)
	checkTxnOffsets(h, v)
	checkTxnFences(h, v)
	return v
}

func txnKind(t *TxnOp) string {
	if t.Commit {
		return "commit"
	}
	return "abort"
}

// checkReads checks each record a read returned belongs to a transaction
// that may have committed, in the partition it was written to, once.
func (x *txnIndex) checkReads(v *Verdict) {
	for _, r := range x.h.Reads {
		for _, rec := range r.Records {
			if rec.Offset < r.From || rec.Offset >= r.End {
				v.fail(nil, "read of p%d [%d,%d) returned offset %d outside it", r.Partition, r.From, r.End, rec.Offset)
			}
			ref, ok := x.byValue[rec.Value]
			if !ok {
				v.fail(nil, "read of p%d returned %q at offset %d, written by no transaction", r.Partition, rec.Value, rec.Offset)
				continue
			}
			t, w := ref.txn, ref.txn.Writes[ref.w]
			if w.Partition != r.Partition {
				v.fail(nil, "read of p%d returned %q of transaction %s, written to p%d", r.Partition, rec.Value, t.ID, w.Partition)
			}
			if !t.mayCommit() {
				v.fail(nil, "read_committed read of p%d returned %q (offset %d) of transaction %s that did not commit (%s, %s)",
					r.Partition, rec.Value, rec.Offset, t.ID, txnKind(t), t.Outcome)
			}
			if w.Acked && w.Offset != rec.Offset {
				v.fail(nil, "%q of transaction %s acknowledged at p%d offset %d, read at %d", rec.Value, t.ID, w.Partition, w.Offset, rec.Offset)
			}
			if off, ok := x.seen[rec.Value]; ok && off != rec.Offset {
				v.fail(nil, "%q of transaction %s read at offsets %d and %d of p%d", rec.Value, t.ID, off, rec.Offset, r.Partition)
			}
			x.seen[rec.Value] = rec.Offset
			x.visible[t] = true
		}
	}
}

// checkWhole checks every committed or visible transaction is visible
// whole in every read that covered one of its records, and in the final
// reads.
func (x *txnIndex) checkWhole(v *Verdict) {
	final := map[int32]map[string]int{} // partition → value → times read
	for _, r := range x.h.Reads {
		if !r.Final {
			continue
		}
		if final[r.Partition] == nil {
			final[r.Partition] = map[string]int{}
		}
		for _, rec := range r.Records {
			final[r.Partition][rec.Value]++
		}
	}
	v.Counts["final_partitions"] = len(final)
	for i := range x.h.Txns {
		t := &x.h.Txns[i]
		if !t.committed() && !x.visible[t] {
			continue
		}
		v.Counts["txn_visible"]++
		for _, w := range t.Writes {
			x.checkWrite(v, t, w, final)
		}
	}
}

func (x *txnIndex) checkWrite(v *Verdict, t *TxnOp, w TxnWrite, final map[int32]map[string]int) {
	off, known := w.Offset, w.Acked
	if o, ok := x.seen[w.Value]; ok {
		off, known = o, true
	}
	if known {
		for _, r := range x.h.Reads {
			if r.Partition != w.Partition || off < r.From || off >= r.End || txnReadHas(r, w.Value) {
				continue
			}
			v.fail(nil, "transaction %s (%s) seen partly: read of p%d [%d,%d) lacks its %q at offset %d",
				t.ID, t.Outcome, r.Partition, r.From, r.End, w.Value, off)
		}
	}
	if f, ok := final[w.Partition]; ok && f[w.Value] != 1 {
		v.fail(nil, "transaction %s (%s): final reads of p%d hold its %q %d times, want once",
			t.ID, t.Outcome, w.Partition, w.Value, f[w.Value])
	}
}

func txnReadHas(r TxnRead, value string) bool {
	for _, rec := range r.Records {
		if rec.Value == value {
			return true
		}
	}
	return false
}

// txnGroupKey names one group offset: a transactional id's group and a
// partition.
type txnGroupKey struct {
	txnID string
	p     int32
}

// checkTxnOffsets checks committed group offsets move with their
// transactions' commits and only with them.
func checkTxnOffsets(h *TxnHistory, v *Verdict) {
	by := map[txnGroupKey]map[int64]*TxnOp{}
	for i := range h.Txns {
		t := &h.Txns[i]
		for p, off := range t.Offsets {
			k := txnGroupKey{t.TxnID, p}
			if by[k] == nil {
				by[k] = map[int64]*TxnOp{}
			}
			by[k][off] = t
		}
	}
	v.Counts["offset_reads"] = len(h.Offsets)
	for _, r := range h.Offsets {
		k := txnGroupKey{r.TxnID, r.Partition}
		if r.Offset >= 0 {
			t, ok := by[k][r.Offset]
			switch {
			case !ok:
				v.fail(nil, "group of %s p%d: offset %d read, committed by no transaction", r.TxnID, r.Partition, r.Offset)
			case !t.mayCommit():
				v.fail(nil, "group of %s p%d: offset %d read, committed in transaction %s that did not commit (%s, %s)",
					r.TxnID, r.Partition, r.Offset, t.ID, txnKind(t), t.Outcome)
			}
		}
		for off, t := range by[k] {
			if t.committed() && t.Complete < r.Invoke && r.Offset < off {
				v.fail(nil, "group of %s p%d: offset %d read after transaction %s committed offset %d",
					r.TxnID, r.Partition, r.Offset, t.ID, off)
			}
		}
	}
}

// checkTxnFences checks no fenced producer instance got a write or a
// commit acknowledged after a newer instance was initialised.
func checkTxnFences(h *TxnHistory, v *Verdict) {
	fenced := map[string][]TxnFence{}
	for _, f := range h.Fences {
		fenced[f.TxnID] = append(fenced[f.TxnID], f)
	}
	v.Counts["fences"] = len(h.Fences)
	for i := range h.Txns {
		t := &h.Txns[i]
		for _, f := range fenced[t.TxnID] {
			if f.Instance <= t.Instance {
				continue
			}
			for _, w := range t.Writes {
				if w.Acked && w.Invoke > f.Time {
					v.fail(nil, "%s instance %d: write %q acknowledged though sent after instance %d fenced it",
						t.TxnID, t.Instance, w.Value, f.Instance)
				}
			}
			if t.committed() && t.End > f.Time {
				v.fail(nil, "%s instance %d: transaction %s commit acknowledged though sent after instance %d fenced it",
					t.TxnID, t.Instance, t.ID, f.Instance)
			}
		}
	}
}

// String summarises a transaction for problems and logs.
func (t *TxnOp) String() string {
	return fmt.Sprintf("%s %s/%d %s %s (%d writes)", t.ID, t.TxnID, t.Instance, txnKind(t), t.Outcome, len(t.Writes))
}

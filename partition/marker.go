package partition

import (
	"errors"
	"fmt"

	"github.com/logd/logd/internal/batch"
)

// Transaction markers are numbered. The coordinator numbers each producer
// id's transactions from 1 and writes the number in the marker record's
// coordinator-epoch field (0: a marker without a number, applied as
// always). A marker is written again after a write that failed or timed
// out, and the first copy may still be on its way: a copy landing after
// the producer's next transaction began here would end that one (a late
// COMMIT committing its records here while its other partitions abort
// them). So a marker of a transaction whose marker this partition applied
// already changes nothing, and the leader does not write it at all; a
// copy of a marker still on its way on this leader waits for it.
//
// The number is kept in the producer's state (markerTxn), as it is
// applied: on every replica, and in the rebuild at open from the markers
// of the segments it scans.

// pendingMarker is a marker started on this leader and not applied yet.
type pendingMarker struct {
	txn  int32
	lead uint64
	w    Write
}

// markerAnswer is how the leader answers a marker of transaction txn
// before writing it: dup when the partition applied txn's marker (or a
// later one) already, orig when a copy of it is on its way under lead.
// st.appendMu is held; it takes p.mu.
func (p *Partition) markerAnswer(st *producerState, epoch int16, txn int32, lead uint64) (dup bool, orig Write) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A marker fences its producer's older epochs from here on (under
	// appendMu, so no batch checked before it is started after it).
	st.fence = max(st.fence, epoch)
	if txn <= 0 {
		return false, nil
	}
	if txn <= st.markerTxn {
		return true, nil
	}
	m := st.markerPending
	if m == nil {
		return false, nil
	}
	if m.lead != lead || failed(m.w) {
		st.markerPending = nil // under another leadership: applied by now, or lost
		return false, nil
	}
	if txn < m.txn {
		return true, nil // a later transaction's marker is on its way
	}
	if txn == m.txn {
		return false, m.w
	}
	return false, nil
}

// startMarker starts a transaction marker on the leader (StartAppendVia
// for a control batch): no part of its producer's sequences; answered at
// once when its transaction's marker is applied here already, by the copy
// on its way when there is one.
func (p *Partition) startMarker(st *producerState, c batch.Checked, info batch.Info, lead uint64, start func(c batch.Checked, after Write) (Write, error)) (*Appending, error) {
	m, err := batch.ControlMarker(c.Bytes())
	if err != nil {
		return nil, err
	}
	dup, orig := p.markerAnswer(st, info.ProducerEpoch, m.CoordinatorEpoch, lead)
	switch {
	case dup:
		return &Appending{p: p, res: AppendResult{BaseOffset: -1, LastOffset: -1, Duplicate: true}}, nil
	case orig != nil:
		return &Appending{p: p, w: orig, retry: true}, nil
	}
	w, err := start(c, nil)
	if err != nil {
		return nil, err
	}
	if m.CoordinatorEpoch > 0 {
		p.mu.Lock()
		if m.CoordinatorEpoch > st.markerTxn { // not applied during start (a single node's is)
			st.markerPending = &pendingMarker{txn: m.CoordinatorEpoch, lead: lead, w: w}
		}
		p.mu.Unlock()
	}
	return &Appending{p: p, w: w}, nil
}

// applyMarker records a marker applied here (every replica; the rebuild
// at open) in its producer's state: it fences the producer's older
// epochs, and reports whether the marker is to end the producer's
// transaction, false for a copy of a marker applied already.
func (p *Partition) applyMarker(info batch.Info, b []byte) bool {
	m, err := batch.ControlMarker(b)
	if err != nil {
		return true // not read here; trackTxnLocked reads it again
	}
	st := p.producer(info.ProducerID)
	p.mu.Lock()
	defer p.mu.Unlock()
	st.fence = max(st.fence, info.ProducerEpoch)
	if m.CoordinatorEpoch <= 0 {
		return true
	}
	if m.CoordinatorEpoch <= st.markerTxn {
		return false
	}
	st.markerTxn = m.CoordinatorEpoch
	if pm := st.markerPending; pm != nil && pm.txn <= st.markerTxn {
		st.markerPending = nil
	}
	return true
}

// failed reports whether w's outcome is final and a failure.
func failed(w Write) bool {
	select {
	case <-w.Done():
		_, err := w.Result()
		return err != nil
	default:
		return false
	}
}

// errTxnEnded: a batch verified as a transaction's arrived after that
// transaction's marker (TxnEnded).
var errTxnEnded = errors.New("the transaction ended in this partition")

// TxnEnded reports whether err refused a verified batch whose transaction
// had ended in the partition (StartTxnAppendVia).
func TxnEnded(err error) bool { return errors.Is(err, errTxnEnded) }

// checkTxnLive refuses a batch verified as transaction txn's once txn's
// marker, or a later one, is applied here or on its way. st.appendMu is
// held.
func (p *Partition) checkTxnLive(st *producerState, info batch.Info, txn int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := st.markerTxn
	if m := st.markerPending; m != nil && !failed(m.w) {
		last = max(last, m.txn)
	}
	if txn <= last {
		return fmt.Errorf("%w: producer %d's batch of transaction %d came after the transaction's marker", errTxnEnded, info.ProducerID, txn)
	}
	return nil
}

// TxnOpen reports whether producer pid has a transaction open in the
// partition that goes on: a batch of it applied, and no marker applied or
// on its way (a batch after a marker on its way begins the producer's next
// transaction, and is verified as its first). It is what a batch started
// as TxnContinues is checked against, under its producer's append lock;
// asked anywhere else, a marker may start right after the answer.
func (p *Partition) TxnOpen(pid int64) bool {
	t := &p.txn
	if t.nOpen.Load() == 0 {
		return false
	}
	t.mu.Lock()
	_, open := t.open[pid]
	t.mu.Unlock()
	if !open {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.producers[pid]
	return !ok || st.markerPending == nil || failed(st.markerPending.w)
}

// TxnContinues, as StartTxnAppendVia's txn, starts a batch that goes on
// the transaction its producer has open in the partition, unverified. The
// partition checks it as it starts the write, under the producer's append
// lock, which a marker takes too: when no such transaction is open there
// (its marker applied or on its way), the start fails with an error
// TxnNotOpen recognises, and the batch is to be verified with the
// coordinator as its transaction's first and started again with the
// transaction's number. Otherwise a late batch of an ended transaction
// would open one here that no marker ends.
const TxnContinues int32 = -1

// errTxnNotOpen: a batch started as TxnContinues found no transaction of
// its producer open.
var errTxnNotOpen = errors.New("no transaction of the producer is open in this partition")

// TxnNotOpen reports whether err refused a batch started as TxnContinues
// because its producer has no transaction open in the partition: verify
// it, then start it again.
func TxnNotOpen(err error) bool { return errors.Is(err, errTxnNotOpen) }

// checkTxnGoesOn refuses a batch started as TxnContinues unless its
// producer's transaction is open here (TxnOpen). st.appendMu is held, so
// no marker of the producer starts meanwhile.
func (p *Partition) checkTxnGoesOn(info batch.Info) error {
	if !p.TxnOpen(info.ProducerID) {
		return fmt.Errorf("%w: producer %d's batch is its transaction's first here", errTxnNotOpen, info.ProducerID)
	}
	return nil
}

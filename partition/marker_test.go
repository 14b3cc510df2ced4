package partition

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// numbered is producer pid's marker of transaction txn at epoch 0.
func numbered(t *testing.T, pid int64, commit bool, txn int32) batch.Checked {
	t.Helper()
	c, err := batch.CheckControl(batch.EncodeControl(nil, batch.Producer{ID: pid}, commit, txn, 1))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A copy of transaction 1's COMMIT marker written again after the
// producer's transaction 2 began is answered as a duplicate and not
// written: transaction 2 stays open, and its ABORT lists it.
func TestLateMarkerCopyIsNotWritten(t *testing.T) {
	l, err := log.Open(t.TempDir(), log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := newPartition("t", 0, l)
	for _, c := range []batch.Checked{txnBatch(t, 7, 0, 1), numbered(t, 7, true, 1), txnBatch(t, 7, 1, 1)} { // 0, 1, 2
		if _, err := p.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Append(numbered(t, 7, true, 1))
	if err != nil || !res.Duplicate {
		t.Fatalf("late copy of transaction 1's marker: %+v, %v; want a duplicate", res, err)
	}
	if next := l.NextOffset(); next != 3 {
		t.Fatalf("next offset %d after the late copy, want 3 (not written)", next)
	}
	if got := p.LastStable(); got != 2 {
		t.Fatalf("LSO %d, want 2 (transaction 2 still open)", got)
	}
	if _, err := p.Append(numbered(t, 7, false, 2)); err != nil { // 3
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 3}}
	if got := p.Aborted(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
}

// A late copy that reached the log (written by another path) changes
// nothing where it is applied: on a replica applying the log in order,
// and in the rebuild at open.
func TestLateMarkerCopyAppliedChangesNothing(t *testing.T) {
	dir := t.TempDir()
	l, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []batch.Checked{
		txnBatch(t, 7, 0, 1),      // 0: transaction 1
		numbered(t, 7, true, 1),   // 1: its COMMIT
		txnBatch(t, 7, 1, 1),      // 2: transaction 2
		numbered(t, 7, true, 1),   // 3: a late copy of transaction 1's COMMIT
		numbered(t, 7, false, 2),  // 4: transaction 2's ABORT
		txnBatchEpoch(t, 8, 0, 0), // 5: another producer's, unnumbered markers
		marker(t, 8, false),       // 6
		txnBatchEpoch(t, 8, 0, 1), // 7
		marker(t, 8, false),       // 8
	} {
		_, w, err := l.AppendStart(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 4}, {ProducerID: 8, FirstOffset: 5, LastOffset: 6}, {ProducerID: 8, FirstOffset: 7, LastOffset: 8}}

	replica := newPartition("t", 0, l)
	b, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Split(b, func(one []byte, info batch.Info) error {
		replica.Applied(info, append([]byte(nil), one...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := replica.Aborted(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("applied: aborted %v, want %v", got, want)
	}

	rebuilt := newPartition("t", 0, l)
	if err := rebuilt.recoverProducers(); err != nil {
		t.Fatal(err)
	}
	if got := rebuilt.Aborted(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt: aborted %v, want %v", got, want)
	}
}

// On a leader whose writes pipeline, a marker written again while its
// first copy is on its way waits for that copy instead of starting a
// second; once applied, a further copy is answered without a write; under
// a new leadership a copy whose first write failed is written.
func TestPipelinedMarkerCopies(t *testing.T) {
	f := newFake(t)
	sendMarker := func(lead uint64, commit bool, txn int32) started {
		t.Helper()
		c := numbered(t, 7, commit, txn)
		a, err := f.p.StartAppendVia(c, lead, f.start(c.Info()))
		return started{a, err}
	}
	first := sendMarker(1, true, 1)
	again := sendMarker(1, true, 1)
	if again.err != nil || len(f.started) != 1 {
		t.Fatalf("a copy while the first is on its way: err %v, %d started, want 1", again.err, len(f.started))
	}
	if !again.blocked() {
		t.Fatal("the copy was answered before the first was applied")
	}
	f.apply()
	if r, err := first.result(t); err != nil || r.Duplicate || r.BaseOffset != 0 {
		t.Fatalf("first copy: %+v, %v", r, err)
	}
	if r, err := again.result(t); err != nil || !r.Duplicate || r.BaseOffset != 0 {
		t.Fatalf("second copy: %+v, %v; want the first's offset as a duplicate", r, err)
	}
	if r, err := sendMarker(1, true, 1).result(t); err != nil || !r.Duplicate || len(f.started) != 1 {
		t.Fatalf("copy after it was applied: %+v, %v, %d started; want a duplicate, no write", r, err, len(f.started))
	}

	lost := sendMarker(1, false, 2)
	f.fail()
	if _, err := lost.result(t); err == nil {
		t.Fatal("the failed write answered no error")
	}
	retry := sendMarker(2, false, 2)
	if retry.err != nil || len(f.started) != 3 {
		t.Fatalf("copy under a new leadership after a failed write: err %v, %d started, want it written", retry.err, len(f.started))
	}
	f.apply()
	if r, err := retry.result(t); err != nil || r.Duplicate {
		t.Fatalf("rewritten marker: %+v, %v", r, err)
	}
	if r, err := sendMarker(2, true, 1).result(t); err != nil || !r.Duplicate || len(f.started) != 3 {
		t.Fatalf("an older transaction's marker: %+v, %v, %d started; want a duplicate, no write", r, err, len(f.started))
	}
}

// A batch the coordinator verified as transaction 1's is refused once
// transaction 1's marker is on its way or applied here (the transaction
// ended here before the batch arrived); one of transaction 2 is not.
func TestVerifiedBatchAfterItsMarkerIsRefused(t *testing.T) {
	f := newFake(t)
	sendTxn := func(txn int32, seq int32) started {
		t.Helper()
		in := info(0, seq, 1)
		a, err := f.p.StartTxnAppendVia(txnChecked(t, in), 1, txn, f.start(in))
		return started{a, err}
	}
	first := sendTxn(1, 0)
	f.applyAll()
	if r, err := first.result(t); err != nil {
		t.Fatalf("transaction 1's batch: %+v, %v", r, err)
	}
	c := numbered(t, 7, true, 1)
	if _, err := f.p.StartAppendVia(c, 1, f.start(c.Info())); err != nil {
		t.Fatal(err)
	}
	if s := sendTxn(1, 1); !TxnEnded(s.err) {
		t.Fatalf("transaction 1's batch with its marker on its way: %v, want refused", s.err)
	}
	f.applyAll()
	if s := sendTxn(1, 1); !TxnEnded(s.err) {
		t.Fatalf("transaction 1's batch after its marker: %v, want refused", s.err)
	}
	if s := sendTxn(2, 1); s.err != nil {
		t.Fatalf("transaction 2's batch: %v", s.err)
	}
}

// txnChecked is a transactional batch of in's producer and sequence.
func txnChecked(t *testing.T, in batch.Info) batch.Checked {
	t.Helper()
	b := batch.Encode(nil, 0, batch.Producer{ID: in.ProducerID, Epoch: in.ProducerEpoch, Sequence: in.FirstSequence}, []batch.Record{{Timestamp: 1, Value: []byte("v")}})
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	c, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyAll applies every started entry.
func (f *fakeRaft) applyAll() {
	for f.applied < len(f.started) {
		f.apply()
	}
}

// A producer's transaction whose marker is on its way does not go on: its
// next batch is the first of its next transaction (and is verified).
func TestTxnOpenEndsWithAMarkerOnItsWay(t *testing.T) {
	f := newFake(t)
	d := txnChecked(t, info(0, 0, 1))
	if _, err := f.p.StartAppendVia(d, 1, f.start(d.Info())); err != nil {
		t.Fatal(err)
	}
	f.applyAll()
	if !f.p.TxnOpen(7) {
		t.Fatal("a transaction with a batch applied is not open")
	}
	c := numbered(t, 7, true, 1)
	if _, err := f.p.StartAppendVia(c, 1, f.start(c.Info())); err != nil {
		t.Fatal(err)
	}
	if f.p.TxnOpen(7) {
		t.Fatal("a transaction whose marker is on its way still reads as open")
	}
}

// A batch started as TxnContinues (TxnOpen answered true, nothing was
// verified) goes on its producer's open transaction, and is refused with
// TxnNotOpen once that transaction's marker is on its way or applied:
// TxnOpen may have answered before the marker started, or from a state
// the marker was not applied to yet. Stored, it would open a transaction
// here that no marker ends.
func TestBatchGoingOnAnEndedTransactionIsRefused(t *testing.T) {
	f := newFake(t)
	send := func(seq int32) started {
		t.Helper()
		in := info(0, seq, 1)
		a, err := f.p.StartTxnAppendVia(txnChecked(t, in), 1, TxnContinues, f.start(in))
		return started{a, err}
	}
	d := txnChecked(t, info(0, 0, 1))
	if _, err := f.p.StartTxnAppendVia(d, 1, 1, f.start(d.Info())); err != nil {
		t.Fatal(err)
	}
	f.applyAll()
	if !f.p.TxnOpen(7) {
		t.Fatal("a transaction with a batch applied is not open")
	}
	if s := send(1); s.err != nil {
		t.Fatalf("a batch going on the open transaction: %v", s.err)
	}
	f.applyAll()
	c := numbered(t, 7, true, 1)
	if _, err := f.p.StartAppendVia(c, 1, f.start(c.Info())); err != nil {
		t.Fatal(err)
	}
	if s := send(2); !TxnNotOpen(s.err) {
		t.Fatalf("a batch going on the transaction whose marker is on its way: %v, want TxnNotOpen", s.err)
	}
	f.applyAll()
	if s := send(2); !TxnNotOpen(s.err) {
		t.Fatalf("a batch going on the transaction whose marker is applied: %v, want TxnNotOpen", s.err)
	}
	if n := len(f.started); n != 3 {
		t.Fatalf("%d writes started, want 3 (the refused batches were not)", n)
	}
	in := info(0, 2, 1)
	if _, err := f.p.StartTxnAppendVia(txnChecked(t, in), 1, 2, f.start(in)); err != nil {
		t.Fatalf("the batch verified as transaction 2's: %v", err)
	}
}

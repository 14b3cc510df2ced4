package partition

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// txnBatch is n records of producer pid in a transaction.
func txnBatch(t *testing.T, pid int64, seq int32, n int) batch.Checked {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1, Value: []byte("v")}
	}
	b := batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: 0, Sequence: seq}, recs)
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	c, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func marker(t *testing.T, pid int64, commit bool) batch.Checked {
	t.Helper()
	c, err := batch.CheckFrame(batch.EncodeControl(nil, batch.Producer{ID: pid}, commit, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The last stable offset stays at an open transaction's first offset
// until its marker; an aborted transaction is listed for the offsets it
// spans; the state is rebuilt from the log at open; markers take no part
// in their producer's sequences.
func TestTransactionsLastStableAndAborted(t *testing.T) {
	dir := t.TempDir()
	l0, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l0)
	appendAll := func(cs ...batch.Checked) {
		for _, c := range cs {
			if _, err := p.Append(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAll(txnBatch(t, 7, 0, 3)) // 0-2
	if got := p.LastStable(); got != 0 {
		t.Fatalf("LSO with a transaction open at 0: %d", got)
	}
	appendAll(marker(t, 7, true), txnBatch(t, 7, 3, 2)) // 3, 4-5
	if got := p.LastStable(); got != 4 {
		t.Fatalf("LSO after a commit and a new transaction at 4: %d", got)
	}
	appendAll(txnBatch(t, 8, 0, 1), marker(t, 7, false)) // 6, 7
	if got := p.LastStable(); got != 6 {
		t.Fatalf("LSO with producer 8 open at 6: %d", got)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 4, LastOffset: 7}}
	if got := p.Aborted(0, 8); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
	if got := p.Aborted(8, 9); len(got) != 0 {
		t.Fatalf("aborted after the marker: %v", got)
	}
	if got := p.Aborted(0, 4); len(got) != 0 {
		t.Fatalf("aborted before its first offset: %v", got)
	}
	// Producer 7's sequence continues across its markers.
	appendAll(txnBatch(t, 7, 5, 1)) // 8

	l0.Close()
	l, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	q := newPartition("t", 0, l)
	if err := q.recoverProducers(); err != nil {
		t.Fatal(err)
	}
	if got := q.LastStable(); got != 6 {
		t.Fatalf("LSO after reopening: %d, want 6", got)
	}
	if got := q.Aborted(0, 9); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted after reopening %v, want %v", got, want)
	}
	if _, err := q.Append(marker(t, 8, true)); err != nil {
		t.Fatal(err)
	}
	if got := q.LastStable(); got != 8 {
		t.Fatalf("LSO after 8 commits: %d, want 8 (7's transaction at 8)", got)
	}
}

// txnBatchEpoch is txnBatch at epoch.
func txnBatchEpoch(t *testing.T, pid int64, epoch int16, seq int32) batch.Checked {
	t.Helper()
	b := batch.Encode(nil, 0, batch.Producer{ID: pid, Epoch: epoch, Sequence: seq}, []batch.Record{{Timestamp: 1, Value: []byte("v")}})
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	c, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A transaction marker of a newer epoch (the coordinator ending the
// transaction of an instance a newer one fenced) fences the older epoch:
// the zombie's next batch is refused, on the node that wrote the marker
// and after a rebuild from the log; the newer epoch writes on.
func TestMarkerFencesOlderEpoch(t *testing.T) {
	dir := t.TempDir()
	l0, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l0)
	if _, err := p.Append(txnBatchEpoch(t, 7, 37, 0)); err != nil {
		t.Fatal(err)
	}
	abort, err := batch.CheckFrame(batch.EncodeControl(nil, batch.Producer{ID: 7, Epoch: 38}, false, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(abort); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(txnBatchEpoch(t, 7, 37, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("epoch 37 after an epoch-38 marker: %v, want refused", err)
	}
	if _, err := p.Append(txnBatchEpoch(t, 7, 39, 0)); err != nil {
		t.Fatalf("epoch 39: %v", err)
	}
	if err := l0.Close(); err != nil {
		t.Fatal(err)
	}
	l1, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Close()
	p1 := newPartition("t", 0, l1)
	if err := p1.recoverProducers(); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Append(txnBatchEpoch(t, 7, 37, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("after the rebuild, epoch 37: %v, want refused", err)
	}
}

// Raft applies the entries after its last snapshot again when a replica
// restarts, after the partition rebuilt its transactions from the log:
// batches tracked already change nothing. Here an ABORT marker applied
// again while the producer's next transaction is open must not end that
// one (listing a span that starts after its own end), nor list its own
// transaction twice.
func TestTransactionsReappliedBatchesChangeNothing(t *testing.T) {
	dir := t.TempDir()
	l0, err := log.Open(dir, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l0.Close()
	p := newPartition("t", 0, l0)
	for _, c := range []batch.Checked{txnBatch(t, 7, 0, 1), marker(t, 7, false), txnBatch(t, 7, 1, 1)} {
		if _, err := p.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.recoverProducers(); err != nil {
		t.Fatal(err)
	}
	// Raft applies the log again from offset 0 (its snapshot's index).
	b, err := l0.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Split(b, func(one []byte, info batch.Info) error {
		p.Applied(info, append([]byte(nil), one...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := p.LastStable(); got != 2 {
		t.Fatalf("LSO after the entries were applied again: %d, want 2 (the open transaction)", got)
	}
	if _, err := p.Append(marker(t, 7, false)); err != nil {
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 1}, {ProducerID: 7, FirstOffset: 2, LastOffset: 3}}
	if got := p.Aborted(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
}

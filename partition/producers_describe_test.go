package partition

import (
	"reflect"
	"testing"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// Producers describes each producer: its epoch and last sequence, its last
// batch's timestamp, its open transaction's first offset; a marker of a
// newer epoch starts its sequence again, and its number is the producer's
// coordinator epoch; a producer whose state was
// evicted is still described while its transaction is open.
func TestProducersDescribe(t *testing.T) {
	l, err := log.Open(t.TempDir(), log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l)
	t.Cleanup(func() { l.Close() })
	appendAll := func(cs ...batch.Checked) {
		t.Helper()
		for _, c := range cs {
			if _, err := p.Append(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	plain, err := batch.Validate(batch.Encode(nil, 0, batch.Producer{ID: 9, Sequence: 0},
		[]batch.Record{{Timestamp: 5, Value: []byte("a")}, {Timestamp: 4, Value: []byte("b")}}))
	if err != nil {
		t.Fatal(err)
	}
	appendAll(txnBatch(t, 7, 0, 3), plain, txnBatch(t, 8, 0, 1)) // 0-2, 3-4, 5
	want := []ProducerInfo{
		{ProducerID: 7, Epoch: 0, LastSequence: 2, LastTimestamp: 1, TxnStartOffset: 0, CoordinatorEpoch: -1},
		{ProducerID: 8, Epoch: 0, LastSequence: 0, LastTimestamp: 1, TxnStartOffset: 5, CoordinatorEpoch: -1},
		{ProducerID: 9, Epoch: 0, LastSequence: 1, LastTimestamp: 5, TxnStartOffset: -1, CoordinatorEpoch: -1},
	}
	if got := p.Producers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("producers\n %+v, want\n %+v", got, want)
	}

	bumped, err := batch.CheckFrame(batch.EncodeControl(nil, batch.Producer{ID: 7, Epoch: 1}, false, 4, 1))
	if err != nil {
		t.Fatal(err)
	}
	appendAll(bumped) // 6
	p.mu.Lock()
	delete(p.producers, 8) // as evictOldest does
	p.mu.Unlock()
	want = []ProducerInfo{
		{ProducerID: 7, Epoch: 1, LastSequence: -1, LastTimestamp: -1, TxnStartOffset: -1, CoordinatorEpoch: 4},
		{ProducerID: 8, Epoch: -1, LastSequence: -1, LastTimestamp: -1, TxnStartOffset: 5, CoordinatorEpoch: -1},
		{ProducerID: 9, Epoch: 0, LastSequence: 1, LastTimestamp: 5, TxnStartOffset: -1, CoordinatorEpoch: -1},
	}
	if got := p.Producers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after producer 7's abort at epoch 1 and 8's eviction\n %+v, want\n %+v", got, want)
	}
}

package batch

import "testing"

// EncodeTransactional's batch is Encode's with the transactional bit: a
// valid batch of the producer, its records as given, not a control batch.
func TestEncodeTransactional(t *testing.T) {
	p := Producer{ID: 42, Epoch: 3, Sequence: 7}
	b := EncodeTransactional([]byte("prefix"), p, []Record{{Key: []byte("k"), Value: []byte("v")}, {Value: []byte("w")}})[len("prefix"):]
	c, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	info := c.Info()
	if !info.IsTransactional() || info.IsControl() || info.ProducerID != 42 || info.ProducerEpoch != 3 || info.FirstSequence != 7 || info.NumRecords != 2 {
		t.Fatalf("info %+v: want a transactional batch of producer 42 epoch 3 from sequence 7 with 2 records", info)
	}
	_, recs, err := Decode(b, 0)
	if err != nil || len(recs) != 2 || string(recs[0].Value) != "v" || string(recs[1].Value) != "w" {
		t.Fatalf("decoded %+v %v", recs, err)
	}
}

package batch

import "testing"

// A stamped batch verifies (its CRC recomputed), carries the log-append-time
// attribute and the broker's time, and its records decode with that time.
func TestStampLogAppendTime(t *testing.T) {
	b := Encode(nil, 0, NoProducer,
		[]Record{{Timestamp: 1000, Value: []byte("a")}, {Timestamp: 1005, Value: []byte("b")}})
	c, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	s := StampLogAppendTime(c, 42_000)
	info, err := Verify(s.Bytes())
	if err != nil {
		t.Fatalf("stamped batch does not verify: %v", err)
	}
	if !info.LogAppendTime() || info.MaxTimestamp != 42_000 || info != s.Info() {
		t.Fatalf("stamped header %+v, Checked says %+v", info, s.Info())
	}
	_, recs, err := Decode(s.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Timestamp != 42_000 {
			t.Errorf("record %d timestamp %d, want the stamp 42000", r.Offset, r.Timestamp)
		}
	}
}

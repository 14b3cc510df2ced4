package meta

import (
	"io"
	"reflect"
	"testing"
)

// A transactional id's record replaces the one before, an empty one
// removes it; snapshots carry the records and a restore replaces what the
// replica had.
func TestFSMTxnState(t *testing.T) {
	f := newFSM(t)
	for i, c := range []Command{
		{Op: OpTxnState, Name: "a", Value: []byte("a1")},
		{Op: OpTxnState, Name: "a", Value: []byte("a2")},
		{Op: OpTxnState, Name: "b", Value: []byte("b1")},
		{Op: OpTxnState, Name: "c", Value: []byte("c1")},
		{Op: OpTxnState, Name: "c"},
	} {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	want := map[string][]byte{"a": []byte("a2"), "b": []byte("b1")}
	if got := f.TxnStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
	s := persist(t, f)
	r := newFSM(t)
	if err := apply(t, r, 1, Command{Op: OpTxnState, Name: "stale", Value: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	if got := r.TxnStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored records %q, want %q", got, want)
	}
}

package meta

import (
	"encoding/json"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
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

// A record written by the coordinator of one term is applied from an
// entry of that term only: proposed after its node lost the lead and won
// it back, it would overwrite the record another leader wrote meanwhile.
func TestFSMTxnStateOfAnotherTermIsNotApplied(t *testing.T) {
	f := newFSM(t)
	put := func(index, entryTerm, term uint64, v string) any {
		b, err := json.Marshal(Command{Op: OpTxnState, Name: "a", Value: []byte(v), Term: term})
		if err != nil {
			t.Fatal(err)
		}
		return f.Apply(&raft.Log{Index: index, Term: entryTerm, Type: raft.LogCommand, Data: b})
	}
	if r := put(1, 1, 1, "t1"); r != nil {
		t.Fatalf("a record of term 1 in an entry of term 1: %v", r)
	}
	if r := put(2, 2, 2, "t2"); r != nil {
		t.Fatalf("a record of term 2 in an entry of term 2: %v", r)
	}
	if r := put(3, 3, 1, "stale"); r == nil {
		t.Fatal("a record of the coordinator of term 1 proposed in term 3 was applied")
	}
	if r := put(4, 3, 0, "any"); r != nil {
		t.Fatalf("a record of no term: %v", r)
	}
	if got := string(f.TxnStates()["a"]); got != "any" {
		t.Fatalf("record %q, want %q", got, "any")
	}
}

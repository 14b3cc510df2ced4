package offsets

import (
	"bytes"
	"testing"
)

func TestGroupStatesSaveListRemove(t *testing.T) {
	s, _ := newStore(t)
	if err := s.SaveGroupState("a\x00b", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveGroupState("c", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveGroupState("c", []byte("three")); err != nil {
		t.Fatal(err)
	}
	// Other keys of the store are not states.
	if err := s.RecordGeneration("c", 4); err != nil {
		t.Fatal(err)
	}
	got, err := s.GroupStates()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got["a\x00b"], []byte("one")) || !bytes.Equal(got["c"], []byte("three")) {
		t.Fatalf("states %q", got)
	}
	if err := s.SaveGroupState("c", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GroupStates(); len(got) != 1 || got["c"] != nil {
		t.Fatalf("states after removing c: %q", got)
	}
	if err := s.SaveGroupState("", []byte("x")); err == nil {
		t.Fatal("a state of the empty group was recorded")
	}
}

package offsets

import (
	"errors"
	"testing"
)

// Delete removes only the partitions named, of the group named.
func TestDeletePartitions(t *testing.T) {
	s, _ := newStore(t)
	mustCommit(t, s, "g", Committed{Topic: "t", Partition: 0, Offset: 1}, Committed{Topic: "t", Partition: 1, Offset: 2}, Committed{Topic: "u", Offset: 3})
	mustCommit(t, s, "h", Committed{Topic: "t", Partition: 0, Offset: 4})
	if err := s.Delete("g", []Committed{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 7}}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Fetch("g", "")
	if err != nil || len(cs) != 2 || cs[0].Partition != 1 || cs[1].Topic != "u" {
		t.Fatalf("g after delete: %+v %v", cs, err)
	}
	if cs, _ := s.Fetch("h", ""); len(cs) != 1 {
		t.Fatalf("h lost its offset: %+v", cs)
	}
	if err := s.Delete("g", []Committed{{Topic: "bad/name"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an invalid topic: %v", err)
	}
}

package meta

import (
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/logd/logd/offsets"
)

// A group's generation is recorded once, only raised, carried in
// snapshots, and kept when the group's offsets are deleted.
func TestFSMGroupGeneration(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := apply(t, f, 1, Command{Op: OpGroupGeneration, Group: "g", Generation: 4}); err != nil {
		t.Fatal(err)
	}
	// The same command again (or a lower one) changes nothing and says so.
	for i, gen := range []int32{4, 2} {
		err := apply(t, f, uint64(2+i), Command{Op: OpGroupGeneration, Group: "g", Generation: gen})
		if !errors.Is(err, offsets.ErrGenerationTaken) {
			t.Fatalf("generation %d again: %v", gen, err)
		}
	}
	if err := apply(t, f, 4, Command{Op: OpGroupGeneration, Group: "h", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, 5, Command{Op: OpDeleteGroup, Group: "g"}); err != nil {
		t.Fatal(err)
	}
	if g, err := f.Offsets().Generation("g"); err != nil || g != 4 {
		t.Fatalf("generation of g after delete_group = %d, %v; want 4", g, err)
	}

	s := persist(t, f)
	r := newFSM(t)
	if err := apply(t, r, 1, Command{Op: OpGroupGeneration, Group: "stale", Generation: 9}); err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Offsets().Generations(); err != nil || !reflect.DeepEqual(got, map[string]int32{"g": 4, "h": 1}) {
		t.Fatalf("restored generations = %v, %v", got, err)
	}
	if err := apply(t, r, 2, Command{Op: OpGroupGeneration, Group: "g", Generation: 4}); !errors.Is(err, offsets.ErrGenerationTaken) {
		t.Fatalf("generation 4 after restore: %v", err)
	}
}

package meta

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/logd/logd/offsets"
)

// A group's membership record replaces the one before, never with an
// older generation; an empty one and delete_group remove it; snapshots
// carry the records, and a restore replaces whatever the replica had.
func TestFSMGroupState(t *testing.T) {
	f := newFSM(t)
	for i, c := range []Command{
		{Op: OpGroupState, Group: "g", Generation: 3, Value: []byte("g3")},
		{Op: OpGroupState, Group: "g", Generation: 4, Value: []byte("g4")},
		{Op: OpGroupState, Group: "h", Generation: 1, Value: []byte("h1")},
		{Op: OpGroupState, Group: "e", Generation: 1, Value: []byte("e1")},
		{Op: OpGroupState, Group: "e", Generation: 2}, // e is empty now
		{Op: OpGroupState, Group: "d", Generation: 7, Value: []byte("d7")},
		{Op: OpDeleteGroup, Group: "d"},
	} {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	err := apply(t, f, 10, Command{Op: OpGroupState, Group: "g", Generation: 3, Value: []byte("late")})
	if !errors.Is(err, offsets.ErrGenerationTaken) {
		t.Fatalf("an older generation's record: %v", err)
	}
	want := map[string]GroupState{"g": {Generation: 4, Value: []byte("g4")}, "h": {Generation: 1, Value: []byte("h1")}}
	if got := f.GroupStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}

	s := persist(t, f)
	r := newFSM(t)
	if err := apply(t, r, 1, Command{Op: OpGroupState, Group: "stale", Generation: 9, Value: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	if got := r.GroupStates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored records %v, want %v", got, want)
	}
}

// A snapshot written before group records existed restores with none.
func TestFSMRestoresSnapshotWithoutGroupStates(t *testing.T) {
	f := newFSM(t)
	if err := apply(t, f, 1, Command{Op: OpGroupState, Group: "g", Generation: 1, Value: []byte("g1")}); err != nil {
		t.Fatal(err)
	}
	old := `{"version":1,"state":{"nodes":{},"topics":{}},"offsets":{},"generations":{"g":5}}`
	if err := f.Restore(io.NopCloser(strings.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	if got := f.GroupStates(); len(got) != 0 {
		t.Fatalf("records %v after restoring a snapshot without any", got)
	}
	if g, err := f.Offsets().Generation("g"); err != nil || g != 5 {
		t.Fatalf("generation %d, %v", g, err)
	}
}

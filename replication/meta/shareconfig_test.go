package meta

import (
	"io"
	"testing"
)

// A share group's configuration replaces the one before, an empty one
// removes it, each change moves the count readers cache by; snapshots
// carry the configurations and a restore replaces what the replica had.
func TestFSMShareGroupConfig(t *testing.T) {
	f := newFSM(t)
	gen := f.ShareGroupConfigGen()
	for i, c := range []Command{
		{Op: OpShareGroupConfig, Name: "a", Value: []byte(`{"x":1}`)},
		{Op: OpShareGroupConfig, Name: "a", Value: []byte(`{"x":2}`)},
		{Op: OpShareGroupConfig, Name: "b", Value: []byte(`{"y":1}`)},
		{Op: OpShareGroupConfig, Name: "c", Value: []byte(`{"z":1}`)},
		{Op: OpShareGroupConfig, Name: "c"},
	} {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if g := f.ShareGroupConfigGen(); g <= gen {
			t.Fatalf("after %+v the count is %d, was %d: want it moved", c, g, gen)
		} else {
			gen = g
		}
	}
	check := func(f *FSM, what string) {
		t.Helper()
		for group, want := range map[string]string{"a": `{"x":2}`, "b": `{"y":1}`, "c": ""} {
			if got := string(f.ShareGroupConfig(group)); got != want {
				t.Fatalf("%s: group %s's config %q, want %q", what, group, got, want)
			}
		}
	}
	check(f, "applied")
	s := persist(t, f)
	r := newFSM(t)
	if err := apply(t, r, 1, Command{Op: OpShareGroupConfig, Name: "c", Value: []byte(`{"stale":1}`)}); err != nil {
		t.Fatal(err)
	}
	before := r.ShareGroupConfigGen()
	if err := r.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	check(r, "restored")
	if r.ShareGroupConfigGen() <= before {
		t.Fatalf("a restore left the count at %d: cached configs would not be read again", before)
	}
}

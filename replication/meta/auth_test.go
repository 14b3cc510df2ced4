package meta

import (
	"io"
	"slices"
	"testing"
)

// Users and ACLs are applied on every replica from the same bytes, survive
// a snapshot and restore, and a restore replaces them (never merges).
func TestFSMAuthCommandsSnapshotRestore(t *testing.T) {
	f, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gen0 := f.AuthGen()
	steps := []Command{
		{Op: OpPutUser, Name: "alice", Value: []byte{1, 2}},
		{Op: OpPutUser, Name: "bob", Value: []byte{3}},
		{Op: OpPutUser, Name: "alice", Value: []byte{4}}, // replace
		{Op: OpAddACLs, ACLs: [][]byte{{9}, {5}, {7}}},
		{Op: OpAddACLs, ACLs: [][]byte{{5}}}, // kept once
		{Op: OpRemoveACLs, ACLs: [][]byte{{7}, {8}}},
		{Op: OpDeleteUser, Name: "bob"},
		{Op: OpDeleteUser, Name: "nobody"}, // no change, no error
	}
	for i, c := range steps {
		if err := apply(t, f, uint64(i+1), c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if f.AuthGen() == gen0 {
		t.Fatal("AuthGen did not change")
	}
	checkAuthState(t, f, "applied")
	s := persist(t, f)
	g := newFSM(t)
	// State the restore must drop.
	if err := apply(t, g, 1, Command{Op: OpPutUser, Name: "mallory", Value: []byte{6}}); err != nil {
		t.Fatal(err)
	}
	before := g.AuthGen()
	if err := g.Restore(io.NopCloser(s)); err != nil {
		t.Fatal(err)
	}
	checkAuthState(t, g, "restored")
	if g.AuthGen() == before {
		t.Fatal("restore did not change AuthGen: indexes would not be rebuilt")
	}
	// A snapshot without auth (an older node's) restores to none.
	var empty sink
	h, err := NewFSM()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sn, _ := h.Snapshot()
	if err := sn.Persist(&empty); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(&empty)); err != nil {
		t.Fatal(err)
	}
	if len(g.Users()) != 0 {
		t.Fatalf("users after restoring an auth-less snapshot: %v", g.Users())
	}
}

// checkAuthState checks the state the commands of the test leave.
func checkAuthState(t *testing.T, f *FSM, what string) {
	t.Helper()
	if got := f.Users(); !slices.Equal(got, []string{"alice"}) {
		t.Fatalf("%s: users %v, want [alice]", what, got)
	}
	if b, ok := f.User("alice"); !ok || !slices.Equal(b, []byte{4}) {
		t.Fatalf("%s: alice = %v %v, want [4]", what, b, ok)
	}
	if _, ok := f.User("bob"); ok {
		t.Fatalf("%s: deleted user bob still there", what)
	}
	_, acls := f.ACLs()
	if !slices.EqualFunc(acls, [][]byte{{5}, {9}}, slices.Equal) {
		t.Fatalf("%s: acls %v, want [[5] [9]]", what, acls)
	}
}

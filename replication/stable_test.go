package replication

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func openPebble(t *testing.T, dir string, fs vfs.FS) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStableStore(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openPebble(t, "db", fs)
	a, b := NewStableStore(db, "p/t/0"), NewStableStore(db, "p/t/1")

	// Missing keys: what raft expects (see raft.NewRaft, raft.HasExistingState).
	if v, err := a.Get([]byte("LastVoteCand")); v != nil || err == nil || err.Error() != "not found" {
		t.Fatalf("Get missing: %q, %v; want nil and an error reading \"not found\"", v, err)
	}
	if v, err := a.GetUint64([]byte("CurrentTerm")); v != 0 || err != nil {
		t.Fatalf("GetUint64 missing: %d, %v; want 0, nil", v, err)
	}

	if err := a.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := b.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Get([]byte("LastVoteCand")); err != nil || !bytes.Equal(v, []byte("node-2")) {
		t.Fatalf("Get: %q, %v", v, err)
	}
	if v, err := a.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("group a term %d, %v; want 42", v, err)
	}
	if v, err := b.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("group b term %d, %v; want 7", v, err)
	}
	if _, err := a.GetUint64([]byte("LastVoteCand")); err == nil {
		t.Fatal("GetUint64 of a 6-byte value should fail")
	}

	// Survives a crash: writes are synced (the memory FS drops unsynced data).
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	db.Close()
	db = openPebble(t, "db", crashed)
	defer db.Close()
	a = NewStableStore(db, "p/t/0")
	if v, err := a.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("after a crash: term %d, %v; want 42", v, err)
	}

	if err := a.Drop(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get([]byte("LastVoteCand")); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("after Drop: %v", err)
	}
	if v, _ := NewStableStore(db, "p/t/1").GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("Drop of one group removed another's keys: %d", v)
	}
}

// raft itself accepts the store: a fresh store has no existing state.
func TestStableStoreHasExistingState(t *testing.T) {
	db := openPebble(t, "db", vfs.NewMem())
	defer db.Close()
	s := NewStableStore(db, "g")
	ok, err := raft.HasExistingState(raft.NewInmemStore(), s, raft.NewInmemSnapshotStore())
	if err != nil || ok {
		t.Fatalf("fresh store: %v, %v", ok, err)
	}
	s.SetUint64([]byte("CurrentTerm"), 3)
	ok, err = raft.HasExistingState(raft.NewInmemStore(), s, raft.NewInmemSnapshotStore())
	if err != nil || !ok {
		t.Fatalf("store with a term: %v, %v", ok, err)
	}
}

// Writing back a value this store synced (raft.NewRaft rewrites the term
// it read, at every wake) writes nothing; another value is written, and so
// is the first write of a store opened again (a restart: what it reads back
// may never have been synced).
func TestStableStoreSameValueNotWritten(t *testing.T) {
	db := openPebble(t, "db", vfs.NewMem())
	defer db.Close()
	s := NewStableStore(db, "p/t/0")
	written := func() uint64 { return db.Metrics().WAL.BytesIn }
	set := func(s *StableStore, term uint64) (wrote bool) {
		t.Helper()
		before := written()
		if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
			t.Fatal(err)
		}
		return written() != before
	}
	if !set(s, 5) {
		t.Fatal("the first term wrote nothing")
	}
	if set(s, 5) {
		t.Fatal("writing the same term again wrote to the WAL")
	}
	if !set(s, 6) {
		t.Fatal("a new term wrote nothing")
	}
	if set(s, 6) {
		t.Fatal("writing the new term again wrote to the WAL")
	}
	again := NewStableStore(db, "p/t/0")
	if !set(again, 6) {
		t.Fatal("a store opened again did not sync the term it holds")
	}
	if set(again, 6) {
		t.Fatal("a store opened again wrote its term twice")
	}
	if err := again.Drop(); err != nil {
		t.Fatal(err)
	}
	if !set(again, 6) {
		t.Fatal("after Drop, the term was not written again")
	}
	if v, err := again.GetUint64([]byte("CurrentTerm")); err != nil || v != 6 {
		t.Fatalf("term %d, %v; want 6", v, err)
	}
}

package offsets

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestRecordGenerationOnlyRaises(t *testing.T) {
	s, _ := newStore(t)
	if g, err := s.Generation("g"); err != nil || g != 0 {
		t.Fatalf("Generation of a new group = %d, %v; want 0", g, err)
	}
	if err := s.RecordGeneration("g", 5); err != nil {
		t.Fatal(err)
	}
	for _, gen := range []int32{5, 4} {
		err := s.RecordGeneration("g", gen)
		var te *GenerationTakenError
		if !errors.Is(err, ErrGenerationTaken) || !errors.As(err, &te) || te.Recorded != 5 {
			t.Fatalf("RecordGeneration(g, %d) = %v; want taken, 5 recorded", gen, err)
		}
	}
	if err := s.RecordGeneration("g", 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("RecordGeneration(g, 0) = %v", err)
	}
	if err := s.RecordGeneration("", 1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("RecordGeneration of an empty group = %v", err)
	}
	// Offsets of the group, and deleting them, do not touch the generation.
	if err := s.Commit("g", []Committed{{Topic: "t", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	if gs, _ := s.Groups(); !reflect.DeepEqual(gs, []string{"g"}) {
		t.Fatalf("Groups = %v", gs)
	}
	if err := s.DeleteGroup("g"); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Generation("g"); err != nil || g != 5 {
		t.Fatalf("Generation after DeleteGroup = %d, %v; want 5", g, err)
	}
	if gs, _ := s.Groups(); len(gs) != 0 {
		t.Fatalf("Groups after delete = %v: a generation is not a committed offset", gs)
	}
}

func TestGenerationsSurviveReopen(t *testing.T) {
	fs := vfs.NewMem()
	db := openDB(t, "db", fs)
	s := New(db, Options{})
	if err := s.RecordGeneration("a\x00b", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordGeneration("c", 7); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, "db", fs)
	t.Cleanup(func() { db.Close() })
	s = New(db, Options{})
	got, err := s.Generations()
	if err != nil || !reflect.DeepEqual(got, map[string]int32{"a\x00b": 3, "c": 7}) {
		t.Fatalf("Generations after reopen = %v, %v", got, err)
	}
	if err := s.SetGenerations(map[string]int32{"d": 2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Generations(); !reflect.DeepEqual(got, map[string]int32{"d": 2}) {
		t.Fatalf("Generations after SetGenerations = %v", got)
	}
}

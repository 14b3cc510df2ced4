package txn

import (
	"testing"
	"time"
)

// Filter selects by state name, producer id, duration since the
// transaction's start (an id that never began one is kept, as in Kafka)
// and a pattern matching the whole id.
func TestFilterMatch(t *testing.T) {
	const now = 100_000
	ongoing := Record{ID: "app-1", ProducerID: 7, State: Ongoing, StartMs: now - 5000}
	fresh := Record{ID: "app-2", ProducerID: 8, State: Empty}
	re, err := CompileIDPattern("app-[0-9]")
	if err != nil {
		t.Fatal(err)
	}
	part, err := CompileIDPattern("app")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f          Filter
		ongoing, e bool
	}{
		{Filter{MinDuration: AnyDuration}, true, true},
		{Filter{States: []string{"Ongoing"}, MinDuration: AnyDuration}, true, false},
		{Filter{States: []string{"Dead"}, MinDuration: AnyDuration}, false, false},
		{Filter{ProducerIDs: []int64{8}, MinDuration: AnyDuration}, false, true},
		{Filter{MinDuration: 4 * time.Second}, true, true},
		{Filter{MinDuration: 5 * time.Second}, false, true},
		{Filter{IDPattern: re, MinDuration: AnyDuration}, true, true},
		{Filter{IDPattern: part, MinDuration: AnyDuration}, false, false},
	} {
		if got := tc.f.Match(ongoing, now); got != tc.ongoing {
			t.Errorf("%+v on the ongoing record: %v", tc.f, got)
		}
		if got := tc.f.Match(fresh, now); got != tc.e {
			t.Errorf("%+v on the empty record: %v", tc.f, got)
		}
	}
	if _, err := CompileIDPattern("("); err == nil {
		t.Error("pattern ( compiled")
	}
	if s, ok := ParseState("PrepareAbort"); !ok || s != PrepareAbort || !KnownState("Dead") || KnownState("Bogus") {
		t.Error("state names")
	}
}

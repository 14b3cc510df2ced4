package meta

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/logd/logd/offsets"
)

// Quota alterations merge into an entity's values, remove an entity left
// without any, change AuthGen, and survive a snapshot and restore;
// offsets of the partitions named by delete_offsets go, the others stay.
func TestFSMQuotasAndDeleteOffsets(t *testing.T) {
	f := newFSM(t)
	alter := func(i uint64, key string, alt QuotaAlteration) {
		t.Helper()
		b, _ := json.Marshal(alt)
		if err := apply(t, f, i, Command{Op: OpAlterQuota, Name: key, Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	gen0 := f.AuthGen()
	alter(1, "a", QuotaAlteration{Set: map[string]float64{"p": 1, "c": 2}})
	alter(2, "a", QuotaAlteration{Set: map[string]float64{"p": 3}, Remove: []string{"c"}})
	alter(3, "b", QuotaAlteration{Set: map[string]float64{"p": 4}})
	alter(4, "b", QuotaAlteration{Remove: []string{"p"}})
	check := func(f *FSM, what string) {
		t.Helper()
		_, qs := f.Quotas()
		if len(qs) != 1 || len(qs["a"]) != 1 || qs["a"]["p"] != 3 {
			t.Fatalf("%s: %+v", what, qs)
		}
	}
	check(f, "applied")
	if f.AuthGen() == gen0 {
		t.Fatal("AuthGen did not change")
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(persist(t, f))); err != nil {
		t.Fatal(err)
	}
	check(g, "restored")

	cs := []offsets.Committed{{Topic: "t", Partition: 0, Offset: 1}, {Topic: "t", Partition: 1, Offset: 2}}
	if err := apply(t, f, 5, Command{Op: OpCommitOffsets, Group: "g", Offsets: cs}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, 6, Command{Op: OpDeleteOffsets, Group: "g", Offsets: cs[:1]}); err != nil {
		t.Fatal(err)
	}
	if left, err := f.Offsets().Fetch("g", ""); err != nil || len(left) != 1 || left[0].Partition != 1 {
		t.Fatalf("offsets after delete_offsets: %+v %v", left, err)
	}
}

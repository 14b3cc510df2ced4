package broker

import "testing"

// The uniform assignor balances and is sticky: computed again for the
// same members it keeps every partition where it was; when a member
// leaves, only its partitions move.
func TestAssignUniformSticky(t *testing.T) {
	subs := func(ms ...string) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, m := range ms {
			out[m] = map[string]bool{"q": true}
		}
		return out
	}
	counts := map[string]int32{"q": 7}
	first := assignUniform(assignInput{members: []string{"a", "b", "c"}, subs: subs("a", "b", "c"), counts: counts})
	total := 0
	for _, m := range []string{"a", "b", "c"} {
		if n := len(first[m]); n < 2 || n > 3 {
			t.Fatalf("member %s has %d of 7 partitions: %v", m, n, first)
		}
		total += len(first[m])
	}
	if total != 7 {
		t.Fatalf("%d partitions assigned of 7: %v", total, first)
	}
	again := assignUniform(assignInput{members: []string{"a", "b", "c"}, subs: subs("a", "b", "c"), counts: counts, prev: first})
	for _, m := range []string{"a", "b", "c"} {
		if !again[m].equal(first[m]) {
			t.Fatalf("recomputed for the same members: %v, was %v", again, first)
		}
	}
	prev := map[string]tpSet{"a": first["a"], "b": first["b"]}
	after := assignUniform(assignInput{members: []string{"a", "b"}, subs: subs("a", "b"), counts: counts, prev: prev})
	for _, m := range []string{"a", "b"} {
		if len(first[m].minus(after[m])) != 0 {
			t.Fatalf("member %s lost partitions when c left: %v, was %v", m, after[m], first[m])
		}
	}
	if len(after["a"])+len(after["b"]) != 7 {
		t.Fatalf("after c left: %v", after)
	}
}

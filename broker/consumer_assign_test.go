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

// Members joining a group whose members each hold the ceiling of the new
// count get partitions too: of 7 partitions over 6 members one member has
// two and each other one, however many the previous owners held.
func TestAssignUniformBalancesJoiners(t *testing.T) {
	members := []string{"a", "b", "c", "d", "e", "f"}
	subs := map[string]map[string]bool{}
	for _, m := range members {
		subs[m] = map[string]bool{"q": true}
	}
	set := func(ps ...int32) tpSet {
		s := tpSet{}
		for _, p := range ps {
			s[tp{"q", p}] = true
		}
		return s
	}
	prev := map[string]tpSet{"a": set(0, 1, 2), "b": set(4, 5), "c": set(3, 6)}
	got := assignUniform(assignInput{members: members, subs: subs, counts: map[string]int32{"q": 7}, prev: prev})
	total, two := 0, 0
	for _, m := range members {
		switch n := len(got[m]); {
		case n == 2:
			two++
		case n != 1:
			t.Fatalf("member %s has %d of 7 partitions over 6 members: %v", m, n, got)
		}
		total += len(got[m])
		if len(got[m].minus(prev[m])) > 0 && m < "d" {
			t.Fatalf("member %s was given partitions it did not hold while others had none: %v", m, got)
		}
	}
	if total != 7 || two != 1 {
		t.Fatalf("%d partitions assigned, %d members with two: %v", total, two, got)
	}
}

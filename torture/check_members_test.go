package torture

import "testing"

// memberHist is a valid history of two members sharing partition 0: m1
// reads a:1 and b:1 in generation 1 and commits 2; m2 takes the partition
// over in generation 2, reads a:2 and commits 3; a zombie commit of m1 in
// generation 1 is refused; the observer sees 2 in generation 1, then 3 in
// generation 2, and once 0 in a read that straddled two generations.
func memberHist() *hist {
	h := &hist{}
	h.produce("a", 1, 0, 0, 10)
	h.produce("b", 1, 1, 5, 12)
	h.add(Op{Kind: OpAssign, Group: "m", Member: "m1", Generation: 1, Partitions: []int32{0}, Invoke: 13, Complete: 13})
	h.read(0, 14, 15, false, "a:1", "b:1")
	h.ops[len(h.ops)-1].Group, h.ops[len(h.ops)-1].Member = "m", "m1"
	h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m1", Generation: 1, Offset: 2, Invoke: 16, Complete: 17})
	h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 1, Offset: 2, Invoke: 18, Complete: 19})
	h.produce("a", 2, 2, 20, 21)
	h.add(Op{Kind: OpAssign, Group: "m", Member: "m1", Generation: 2, Invoke: 22, Complete: 22})
	h.add(Op{Kind: OpAssign, Group: "m", Member: "m2", Generation: 2, Partitions: []int32{0}, Invoke: 22, Complete: 22})
	h.read(2, 23, 24, false, "a:2")
	h.ops[len(h.ops)-1].Group, h.ops[len(h.ops)-1].Member = "m", "m2"
	h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m2", Generation: 2, Offset: 3, Invoke: 25, Complete: 26})
	h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m1", Generation: 1, Offset: 1, Invoke: 27, Complete: 28, Outcome: OutcomeFail})
	h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 2, Offset: 3, Invoke: 29, Complete: 30})
	h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: -1, Offset: 0, Invoke: 29, Complete: 30})
	h.read(0, 60, 70, true, "a:1", "b:1", "a:2")
	return h
}

func TestGroupMembersAcceptsAGoodHistory(t *testing.T) {
	for _, v := range CheckAll(memberHist().ops, CheckOptions{}) {
		if !v.OK() {
			t.Errorf("%s", v)
		}
	}
	v := CheckGroupMembers(memberHist().ops)
	if v.Counts["commits"] != 2 || v.Counts["refused"] != 1 || v.Counts["generations"] != 2 || v.Counts["observations"] != 3 {
		t.Errorf("counts: %v", v.Counts)
	}
}

func TestGroupMembersCatchesBadHistories(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(h *hist)
		count string
	}{
		{"two owners", func(h *hist) {
			h.add(Op{Kind: OpAssign, Group: "m", Member: "m3", Generation: 2, Partitions: []int32{1, 0}, Invoke: 31, Complete: 31})
		}, "double_owner"},
		{"two owners in one generation", func(h *hist) {
			h.add(Op{Kind: OpAssign, Group: "m", Member: "m1", Generation: 2, Partitions: []int32{0}, Invoke: 31, Complete: 31})
		}, "double_owner"},
		{"observed backwards", func(h *hist) {
			h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 2, Offset: 2, Invoke: 40, Complete: 41})
		}, "backwards"},
		{"commit lost", func(h *hist) {
			h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m2", Generation: 2, Offset: 3, Invoke: 40, Complete: 41})
			h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 2, Offset: 2, Invoke: 42, Complete: 43})
		}, "backwards"},
		{"zombie commit accepted", func(h *hist) {
			h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 1, Offset: 2, Invoke: 40, Complete: 41})
			h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m1", Generation: 1, Offset: 1, Invoke: 42, Complete: 43})
		}, "backwards"},
		{"commit past an undelivered record", func(h *hist) {
			h.produce("b", 2, 3, 40, 41)
			h.produce("a", 3, 4, 40, 41)
			h.read(4, 42, 43, false, "a:3")
			h.ops[len(h.ops)-1].Group, h.ops[len(h.ops)-1].Member = "m", "m2"
			h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m2", Generation: 2, Offset: 5, Invoke: 44, Complete: 45})
			h.read(0, 80, 90, true, "a:1", "b:1", "a:2", "b:2", "a:3")
		}, "skipped"},
		{"observed past a record delivered later", func(h *hist) {
			h.produce("b", 2, 3, 40, 41)
			h.add(Op{Kind: OpMemberObserve, Group: "m", Generation: 2, Offset: 4, Invoke: 42, Complete: 43})
			h.read(3, 44, 45, false, "b:2")
			h.ops[len(h.ops)-1].Group, h.ops[len(h.ops)-1].Member = "m", "m2"
			h.read(0, 80, 90, true, "a:1", "b:1", "a:2", "b:2")
		}, "skipped"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := memberHist()
			c.edit(h)
			v := CheckGroupMembers(h.ops)
			if v.Result != Invalid || v.Counts[c.count] == 0 || len(v.Witness) == 0 {
				t.Fatalf("not caught: %s", v)
			}
			t.Logf("%s", v)
		})
	}
}

// A member process whose generation goes back (a coordinator that
// numbered the group's generations afresh) is caught; another process in
// an older generation than the first's latest is not.
func TestGroupMembersGenerationsGoForward(t *testing.T) {
	h := memberHist()
	h.add(Op{Kind: OpAssign, Group: "m", Process: 1, Member: "m5", Generation: 1, Invoke: 40, Complete: 40})
	if v := CheckGroupMembers(h.ops); !v.OK() {
		t.Fatalf("%s", v)
	}
	h.add(Op{Kind: OpAssign, Group: "m", Member: "m4", Generation: 1, Partitions: []int32{1}, Invoke: 41, Complete: 41})
	v := CheckGroupMembers(h.ops)
	if v.Result != Invalid || v.Counts["generation_backwards"] != 1 {
		t.Fatalf("not caught: %s", v)
	}
}

// A record retention removed before any member read it may be passed.
func TestGroupMembersExemptTrimmed(t *testing.T) {
	h := memberHist()
	h.produce("b", 2, 3, 40, 41)
	h.produce("a", 3, 4, 40, 41)
	h.read(4, 42, 43, false, "a:3")
	h.ops[len(h.ops)-1].Group, h.ops[len(h.ops)-1].Member = "m", "m2"
	h.add(Op{Kind: OpMemberCommit, Group: "m", Member: "m2", Generation: 2, Offset: 5, Invoke: 44, Complete: 45})
	h.read(4, 80, 90, true, "a:3") // the log starts at 4 now
	if v := CheckGroupMembers(h.ops); !v.OK() || v.Counts["trimmed"] == 0 {
		t.Fatalf("%s", v)
	}
}

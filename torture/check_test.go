package torture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hist builds hand-made histories. Times are abstract ticks.
type hist struct{ ops []Op }

func (h *hist) add(op Op) *hist {
	op.ID = len(h.ops)
	if op.Outcome == "" {
		op.Outcome = OutcomeOK
	}
	h.ops = append(h.ops, op)
	return h
}

// produce: producer 0, key k, seq; acked at partition 0, offset off (off < 0:
// outcome unknown).
func (h *hist) produce(key string, seq int64, off int64, inv, comp int64) *hist {
	v := Value{Producer: 0, Key: key, Seq: seq}
	op := Op{Kind: OpProduce, Process: 0, Producer: 0, Key: key, Seq: seq, Value: v.String(), Invoke: inv, Complete: comp, Offset: off}
	if off < 0 {
		op.Outcome, op.Offset = OutcomeUnknown, 0
	}
	return h.add(op)
}

// read partition 0 from `from`, returning values (keys/seqs as "k:seq").
func (h *hist) read(from int64, inv, comp int64, final bool, vals ...string) *hist {
	op := Op{Kind: OpRead, Process: 1, From: from, Invoke: inv, Complete: comp, Final: final, Next: from + int64(len(vals))}
	for i, s := range vals {
		key, seq, _ := strings.Cut(s, ":")
		var n int64
		for _, c := range seq {
			n = n*10 + int64(c-'0')
		}
		op.Records = append(op.Records, ReadRecord{Offset: from + int64(i), Value: Value{Key: key, Seq: n}.String()})
	}
	return h.add(op)
}

// good is a valid history: two acked records of key a, one of b, one of
// unknown outcome that landed, one of unknown outcome that did not, a tail
// read, an empty read at the end, and the final read.
func good() *hist {
	h := &hist{}
	h.produce("a", 1, 0, 0, 10)
	h.produce("b", 1, 1, 5, 12)
	h.produce("a", 2, 2, 11, 20)
	h.produce("b", 2, -1, 21, 30) // unknown, stored at 3
	h.produce("b", 3, -1, 31, 40) // unknown, never stored
	h.read(1, 13, 14, false, "b:1")
	h.read(4, 41, 50, false)
	h.read(0, 60, 70, true, "a:1", "b:1", "a:2", "b:2")
	return h
}

func TestCheckersAcceptAGoodHistory(t *testing.T) {
	for _, v := range CheckAll(good().ops, CheckOptions{}) {
		if !v.OK() {
			t.Errorf("%s", v)
		}
	}
	if v := CheckLost(good().ops); v.Counts["acknowledged"] != 3 || v.Counts["stored_unknown"] != 1 {
		t.Errorf("lost counts: %v", v.Counts)
	}
}

// Each bad history breaks one guarantee; its checker must catch it (and
// show a witness).
func TestCheckersCatchBadHistories(t *testing.T) {
	dir := t.TempDir()
	lin := func(ops []Op) *Verdict {
		return CheckLinearizable(ops, LinearizableOptions{VisualizeDir: dir})
	}
	cases := []struct {
		name  string
		h     *hist
		check func([]Op) *Verdict
		count string
	}{
		{"lost ack", (&hist{}).produce("a", 1, 0, 0, 10).produce("a", 2, 1, 11, 20).
			read(0, 30, 40, true, "a:1"), CheckLost, "lost"},
		{"ack overwritten", (&hist{}).produce("a", 1, 0, 0, 10).produce("a", 2, 1, 11, 20).
			read(0, 30, 40, true, "a:1", "b:1"), CheckLost, "lost"},
		{"duplicate", (&hist{}).produce("a", 1, 0, 0, 10).produce("a", 2, 1, 11, 20).
			read(0, 30, 40, true, "a:1", "a:2", "a:1"), CheckDuplicates, "duplicated"},
		{"reorder", (&hist{}).produce("a", 1, 1, 0, 10).produce("a", 2, 0, 0, 10).
			read(0, 30, 40, true, "a:2", "a:1"), CheckKeyOrder, "reordered"},
		{"reused offset", (&hist{}).produce("a", 1, 0, 0, 10).read(0, 11, 12, false, "a:1").
			read(0, 30, 40, true, "b:1"), CheckOffsets, "reused"},
		{"gap", (&hist{}).produce("a", 1, 0, 0, 10).produce("a", 2, 1, 0, 10).
			add(Op{Kind: OpRead, From: 0, Next: 2, Invoke: 20, Complete: 21, Records: []ReadRecord{{Offset: 1, Value: "0/a/2"}}}), CheckOffsets, "gaps"},
		{"stale read", (&hist{}).produce("a", 1, 0, 0, 10).read(0, 20, 30, false).
			read(0, 40, 50, true, "a:1"), lin, "not_linearizable"},
		{"read from the future", (&hist{}).read(0, 0, 5, false, "a:1").produce("a", 1, 0, 10, 20).
			read(0, 40, 50, true, "a:1"), lin, "not_linearizable"},
		{"append order", (&hist{}).produce("a", 1, 1, 0, 10).produce("b", 1, 0, 20, 30).
			read(0, 40, 50, true, "b:1", "a:1"), lin, "not_linearizable"},
		{"non-monotonic reads", (&hist{}).produce("a", 1, -1, 0, 100).read(0, 10, 20, false, "a:1").
			read(0, 30, 40, false).read(0, 140, 150, true, "a:1"), lin, "not_linearizable"},
		{"read of nothing appended", (&hist{}).produce("a", 1, 0, 0, 10).
			read(0, 40, 50, true, "a:1", "z:9"), lin, "not_linearizable"},
		{"commit lost", (&hist{}).
			add(Op{Kind: OpCommit, Group: "g", Offset: 5, Invoke: 0, Complete: 10}).
			add(Op{Kind: OpCommit, Group: "g", Offset: 9, Invoke: 20, Complete: 30}).
			add(Op{Kind: OpObserve, Group: "g", Offset: 5, Invoke: 40, Complete: 50}), CheckCommittedOffsets, "lost"},
		{"commit backwards", (&hist{}).
			add(Op{Kind: OpCommit, Group: "g", Offset: 5, Invoke: 0, Complete: 10}).
			add(Op{Kind: OpCommit, Group: "g", Offset: 9, Invoke: 0, Complete: 30, Outcome: OutcomeUnknown}).
			add(Op{Kind: OpObserve, Group: "g", Offset: 9, Invoke: 40, Complete: 50}).
			add(Op{Kind: OpObserve, Group: "g", Offset: 5, Invoke: 60, Complete: 70}), CheckCommittedOffsets, "backwards"},
		{"commit vanished", (&hist{}).
			add(Op{Kind: OpCommit, Group: "g", Offset: 5, Invoke: 0, Complete: 10}).
			add(Op{Kind: OpObserve, Group: "g", Offset: -1, Invoke: 40, Complete: 50}), CheckCommittedOffsets, "lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := c.check(c.h.ops)
			if v.Result != Invalid || v.Counts[c.count] == 0 || len(v.Witness) == 0 {
				t.Fatalf("not caught: %s", v)
			}
			t.Logf("%s", v)
		})
	}
	html, _ := filepath.Glob(filepath.Join(dir, "*.html"))
	if len(html) == 0 {
		t.Fatal("no visualization written for the non-linearizable histories")
	}
	if fi, err := os.Stat(html[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization %s: %v", html[0], err)
	}
}

// A reset explains a backwards move of the committed offset; a commit of
// unknown outcome landing late explains one too.
func TestCommittedOffsetsAllowExplainedRegressions(t *testing.T) {
	h := (&hist{}).
		add(Op{Kind: OpCommit, Group: "g", Offset: 9, Invoke: 0, Complete: 10}).
		add(Op{Kind: OpObserve, Group: "g", Offset: 9, Invoke: 20, Complete: 30}).
		add(Op{Kind: OpReset, Group: "g", Offset: 0, Invoke: 35, Complete: 36}).
		add(Op{Kind: OpObserve, Group: "g", Offset: 0, Invoke: 40, Complete: 50}).
		add(Op{Kind: OpCommit, Group: "g", Offset: 3, Invoke: 51, Complete: 52, Outcome: OutcomeUnknown}).
		add(Op{Kind: OpCommit, Group: "g", Offset: 12, Invoke: 53, Complete: 54}).
		add(Op{Kind: OpObserve, Group: "g", Offset: 12, Invoke: 55, Complete: 56}).
		add(Op{Kind: OpObserve, Group: "g", Offset: 3, Invoke: 57, Complete: 58})
	// The last observation sees the unknown commit of 3 although 12 was
	// acknowledged after it completed: that is a lost commit, not allowed.
	v := CheckCommittedOffsets(h.ops)
	if v.Result != Invalid || v.Counts["lost"] != 1 || v.Counts["reset_regressions"] != 1 {
		t.Fatalf("%s", v)
	}
	// Without the final observation everything is explained.
	h.ops = h.ops[:len(h.ops)-1]
	if v := CheckCommittedOffsets(h.ops); !v.OK() {
		t.Fatalf("%s", v)
	}
}

// With retention the final read starts past trimmed records: acknowledged
// records below it count as trimmed, not lost, and a produce of unknown
// outcome that retention removed before anyone read it leaves a hole the
// linearizability check starts after.
func TestCheckersWithRetention(t *testing.T) {
	h := &hist{}
	h.produce("a", 1, 0, 0, 10)
	h.produce("b", 1, -1, 11, 20) // unknown: took offset 1, trimmed unread
	h.read(0, 21, 22, false, "a:1")
	h.produce("a", 2, 2, 23, 30)
	h.read(2, 31, 32, false, "a:2")
	h.read(2, 60, 70, true, "a:2") // the final read: the log starts at 2
	for _, v := range CheckAll(h.ops, CheckOptions{}) {
		if !v.OK() {
			t.Errorf("%s", v)
		}
	}
	if v := CheckLost(h.ops); v.Counts["trimmed"] != 1 {
		t.Errorf("trimmed: %v", v.Counts)
	}
	// A record missing above the final read's start is still lost.
	h.produce("a", 3, 3, 71, 80)
	h.read(2, 90, 95, true, "a:2")
	if v := CheckLost(h.ops); v.OK() || v.Counts["lost"] != 1 {
		t.Errorf("lost above the log start not caught: %s", v)
	}
}

// A produce acknowledged without an offset (a duplicate answered -1) is
// lost unless its value is stored somewhere; seed 3 had two such records
// counted as trimmed.
func TestCheckLostAcknowledgedWithoutOffset(t *testing.T) {
	h := &hist{}
	h.produce("a", 1, 0, 0, 10)
	v := Value{Producer: 0, Key: "a", Seq: 2}
	h.add(Op{Kind: OpProduce, Key: "a", Seq: 2, Value: v.String(), Invoke: 11, Complete: 20, Offset: -1, Duplicate: true})
	h.read(0, 30, 40, true, "a:1")
	if c := CheckLost(h.ops); c.OK() || c.Counts["lost"] != 1 || c.Counts["trimmed"] != 0 {
		t.Fatalf("a record acknowledged at -1 and stored nowhere: %s %v", c, c.Counts)
	}
	h.read(0, 50, 60, true, "a:1", "a:2") // stored after all
	if c := CheckLost(h.ops); !c.OK() || c.Counts["acknowledged_without_offset"] != 1 {
		t.Fatalf("a record acknowledged at -1 and stored: %s %v", c, c.Counts)
	}
}

func TestCheckTimeIndex(t *testing.T) {
	final := Op{Kind: OpRead, Final: true, From: 0, Next: 4, Invoke: 100, Complete: 110, Records: []ReadRecord{
		{Offset: 0, Value: "0/a/1", Timestamp: 1000},
		{Offset: 1, Value: "0/a/2", Timestamp: 1005},
		{Offset: 2, Value: "0/b/1", Timestamp: 1003}, // another producer's clock
		{Offset: 3, Value: "0/a/3", Timestamp: 1010},
	}}
	seek := func(ts, off, hw int64) Op {
		return Op{Kind: OpSeekTime, TimeMs: ts, Offset: off, HighWatermark: hw, Invoke: 50, Complete: 51}
	}
	good := []Op{seek(999, 0, 4), seek(1001, 1, 4), seek(1004, 1, 4), seek(1006, 3, 4), seek(2000, 4, 4), seek(1006, 3, 3)}
	for _, s := range good {
		h := (&hist{}).add(s).add(final)
		if v := CheckTimeIndex(h.ops); !v.OK() || v.Counts["seeks"] != 1 {
			t.Errorf("seek to %d answered %d: %s", s.TimeMs, s.Offset, v)
		}
	}
	bad := []Op{seek(1001, 2, 4), seek(1004, 0, 4), seek(1006, 5, 4), seek(2000, 3, 4)}
	for _, s := range bad {
		h := (&hist{}).add(s).add(final)
		if v := CheckTimeIndex(h.ops); v.OK() || v.Counts["wrong"] != 1 || len(v.Witness) == 0 {
			t.Errorf("seek to %d answered %d not caught: %s", s.TimeMs, s.Offset, v)
		}
	}
}

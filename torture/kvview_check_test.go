package torture

import (
	"strings"
	"testing"
	"time"
)

// viewOps numbers ops and gives each a distinct process unless set.
func viewOps(ops ...ViewOp) []ViewOp {
	for i := range ops {
		ops[i].ID = i
		if ops[i].Key == "" {
			ops[i].Key = "k"
		}
	}
	return ops
}

func vput(proc int, inv, comp int64, value string, off int64) ViewOp {
	return ViewOp{Process: proc, Kind: ViewPut, Invoke: inv, Complete: comp, Outcome: OutcomeOK, Value: value, Offset: off, Expected: -1, Latest: -1}
}

func vget(proc int, inv, comp int64, value string, off int64) ViewOp {
	return ViewOp{Process: proc, Kind: ViewGet, Invoke: inv, Complete: comp, Outcome: OutcomeOK, Found: value != "", Value: value, Offset: off, Expected: -1, Latest: -1}
}

func vcas(proc int, inv, comp int64, value string, expected, off int64) ViewOp {
	return ViewOp{Process: proc, Kind: ViewCAS, Invoke: inv, Complete: comp, Outcome: OutcomeOK, Value: value, Offset: off, Conditional: true, Expected: expected, Latest: -1}
}

func vrefused(op ViewOp, latest int64) ViewOp {
	op.Outcome, op.Refused, op.Latest, op.Offset = OutcomeFail, true, latest, -1
	return op
}

func vunknown(op ViewOp) ViewOp {
	op.Outcome, op.Offset = OutcomeUnknown, -1
	return op
}

func vstale(proc int, inv, comp int64, value string, off int64) ViewOp {
	op := vget(proc, inv, comp, value, off)
	op.Kind = ViewStaleGet
	return op
}

func vdel(proc int, inv, comp int64, off int64) ViewOp {
	return ViewOp{Process: proc, Kind: ViewDelete, Invoke: inv, Complete: comp, Outcome: OutcomeOK, Offset: off, Expected: -1, Latest: -1}
}

func TestCheckKVViewAcceptsLinearizable(t *testing.T) {
	for name, ops := range map[string][]ViewOp{
		"sequential": viewOps(
			vget(1, 0, 1, "", -1),
			vput(1, 2, 3, "a", 0),
			vget(2, 4, 5, "a", 0),
			vcas(2, 6, 7, "b", 0, 1),
			vrefused(vcas(1, 8, 9, "c", 0, -1), 1),
			vdel(1, 10, 11, 2),
			vget(2, 12, 13, "", -1),
			vcas(2, 14, 15, "d", -1, 3),
		),
		// A get concurrent with a put may see either value.
		"concurrent": viewOps(
			vput(1, 0, 1, "a", 0),
			vput(2, 2, 10, "b", 1),
			vget(3, 3, 4, "a", 0),
			vget(3, 5, 6, "b", 1),
			vget(4, 11, 12, "b", 1),
		),
		// A put of unknown outcome that a later get saw took effect; one
		// nobody saw need not have.
		"unknown": viewOps(
			vput(1, 0, 1, "a", 0),
			vunknown(vput(2, 2, 3, "b", -1)),
			vget(3, 4, 5, "a", 0),
			vunknown(vput(2, 6, 7, "c", -1)),
			vget(3, 8, 9, "c", 2),
			vunknown(vput(4, 10, 11, "lost", -1)),
			vget(3, 12, 13, "c", 2),
		),
		// A compare-and-set refused with its own offset: a retry of one
		// that was stored.
		"retried-cas": viewOps(
			vput(1, 0, 1, "a", 0),
			vrefused(vcas(2, 2, 3, "b", 0, -1), 1),
			vstale(4, 3, 4, "b", 1),
			vget(3, 4, 5, "b", 1),
		),
		// A refusal that names the offset of a write nobody saw.
		"refused-by-unknown": viewOps(
			vput(1, 0, 1, "a", 0),
			vunknown(vput(2, 2, 3, "b", -1)),
			vrefused(vcas(1, 4, 5, "c", 0, -1), 7),
		),
	} {
		t.Run(name, func(t *testing.T) {
			v := CheckKVView(ops, 10*time.Second, "")
			if !v.OK() {
				t.Fatalf("want valid, got %s", v)
			}
			if v.Counts["keys"] != 1 || v.Counts["operations"] == 0 {
				t.Errorf("counts %v", v.Counts)
			}
		})
	}
}

func TestCheckKVViewRejectsViolations(t *testing.T) {
	for name, tc := range map[string]struct {
		ops  []ViewOp
		want string
	}{
		// A get that began after b's put was acknowledged returns a.
		"stale-read": {viewOps(
			vput(1, 0, 1, "a", 0),
			vput(1, 2, 3, "b", 1),
			vget(2, 4, 5, "a", 0),
		), "not linearizable"},
		// A get misses a put acknowledged before it began.
		"lost-put": {viewOps(
			vput(1, 0, 1, "a", 0),
			vget(2, 2, 3, "", -1),
		), "not linearizable"},
		// Two compare-and-sets expecting the same offset both succeed.
		"double-cas": {viewOps(
			vput(1, 0, 1, "a", 0),
			vcas(2, 2, 5, "b", 0, 1),
			vcas(3, 2, 5, "c", 0, 2),
		), "not linearizable"},
		// A compare-and-set refused although the key was where it expected.
		"wrong-refusal": {viewOps(
			vput(1, 0, 1, "a", 0),
			vrefused(vcas(2, 2, 3, "b", 0, -1), 5),
			vget(3, 4, 5, "a", 0),
		), "not linearizable"},
		// A deleted key read back.
		"resurrected": {viewOps(
			vput(1, 0, 1, "a", 0),
			vdel(1, 2, 3, 1),
			vget(2, 4, 5, "a", 0),
		), "not linearizable"},
		// The newest value at an older offset than the one it replaced.
		"offset-back": {viewOps(
			vput(1, 0, 1, "a", 5),
			vput(1, 2, 3, "b", 4),
		), "not linearizable"},
		// A stale get of a value whose compare-and-set was refused
		// naming another offset: it was not stored.
		"stale-get-refused": {viewOps(
			vput(1, 0, 1, "a", 0),
			vput(1, 2, 3, "c", 1),
			vrefused(vcas(2, 2, 3, "b", 0, -1), 1),
			vstale(3, 4, 5, "b", 2),
		), "refused naming offset 1"},
		// A stale get of a value at another offset than it was stored at.
		"stale-get-moved": {viewOps(
			vput(1, 0, 1, "a", 0),
			vstale(2, 2, 3, "a", 3),
		), "stored at offset 0"},
		// A stale get of a value nobody wrote.
		"stale-get-invented": {viewOps(
			vput(1, 0, 1, "a", 0),
			ViewOp{Process: 2, Kind: ViewStaleGet, Invoke: 2, Complete: 3, Outcome: OutcomeOK, Found: true, Value: "zz", Offset: 0},
		), "no put of k wrote"},
	} {
		t.Run(name, func(t *testing.T) {
			v := CheckKVView(tc.ops, 10*time.Second, t.TempDir())
			if v.Result != Invalid {
				t.Fatalf("want invalid, got %s", v)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Errorf("problems %q, want %q", v.Problems, tc.want)
			}
		})
	}
}

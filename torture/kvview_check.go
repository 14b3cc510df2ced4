package torture

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// CheckKVView checks the key-value view workload's history: its
// linearizable gets, puts, compare-and-sets and deletes must be
// linearizable against a register per key (porcupine, key by key), and a
// stale get may return only "not found" or a value a put of its key
// wrote, at the offset it was stored at. Writes of unknown outcome may
// have taken effect at any time after they began; refused
// compare-and-sets and failed gets took none. timeout bounds porcupine's
// search per key (0: 60s): when it runs out the verdict is Inconclusive.
// visualizeDir, when set, receives porcupine's HTML visualization of each
// key whose history is not linearizable.
func CheckKVView(ops []ViewOp, timeout time.Duration, visualizeDir string) *Verdict {
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	v := newVerdict("kv-linearizable")
	at := viewOffsets(ops)
	checkStaleGets(v, ops, at)
	v.Counts["not_linearizable"] = 0
	model := viewModel()
	for _, key := range slices.Sorted(maps.Keys(viewKeys(ops))) {
		h, src := viewHistory(ops, key, at)
		v.Counts["keys"]++
		v.Counts["operations"] += len(h)
		res, info := porcupine.CheckOperationsVerbose(model, h, timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v.inconclusive("key %s: porcupine found no answer within %s (%d operations)", key, timeout, len(h))
			continue
		}
		v.Counts["not_linearizable"]++
		v.fail(nil, "key %s is not linearizable against a register: %s", key, viewFrontier(h, src, info))
		if visualizeDir != "" {
			path := filepath.Join(visualizeDir, fmt.Sprintf("linearizability-kv-%s.html", key))
			if err := os.MkdirAll(visualizeDir, 0o755); err == nil && porcupine.VisualizePath(model, info, path) == nil {
				v.Artifacts = append(v.Artifacts, path)
			}
		}
	}
	return v
}

// viewOffsets maps each written value to the offset it was stored at, as
// its put was answered or a linearizable get returned it.
func viewOffsets(ops []ViewOp) map[string]int64 {
	at := map[string]int64{}
	for _, op := range ops {
		if op.Outcome != OutcomeOK || op.Value == "" || op.Offset < 0 {
			continue
		}
		if op.Kind == ViewPut || op.Kind == ViewCAS || op.Kind == ViewGet && op.Found {
			if _, ok := at[op.Value]; !ok {
				at[op.Value] = op.Offset
			}
		}
	}
	return at
}

func viewKeys(ops []ViewOp) map[string]bool {
	keys := map[string]bool{}
	for _, op := range ops {
		keys[op.Key] = true
	}
	return keys
}

// checkStaleGets fails v for a stale get that returned a value no put of
// its key wrote, or a value at another offset than it was stored at. A
// compare-and-set refused with an offset may have been stored there (a
// retry of one that was stored is refused naming its own offset).
func checkStaleGets(v *Verdict, ops []ViewOp, at map[string]int64) {
	type write struct {
		key     string
		refused bool
		latest  int64
	}
	written := map[string]write{} // value -> its put
	for _, op := range ops {
		if op.Kind == ViewPut || op.Kind == ViewCAS {
			written[op.Value] = write{op.Key, op.Refused, op.Latest}
		}
	}
	for _, op := range ops {
		if op.Kind != ViewStaleGet || op.Outcome != OutcomeOK {
			continue
		}
		v.Counts["stale_gets"]++
		if !op.Found {
			continue
		}
		w, ok := written[op.Value]
		off, known := at[op.Value]
		switch {
		case !ok || w.key != op.Key:
			v.fail(nil, "stale get %s: no put of %s wrote that value", op, op.Key)
		case w.refused && w.latest != op.Offset:
			v.fail(nil, "stale get %s: the value's compare-and-set was refused naming offset %d, not its own", op, w.latest)
		case known && off != op.Offset:
			v.fail(nil, "stale get %s: the value was stored at offset %d", op, off)
		}
	}
}

// viewInput is an operation of the register model.
type viewInput struct {
	kind        ViewOpKind
	key, value  string
	conditional bool
	expected    int64
}

// viewOutput is what an operation returned. offset -1 for a write: not
// known (its outcome is unknown and no get saw its value).
type viewOutput struct {
	unknown bool // a write of unknown outcome
	refused bool
	latest  int64
	found   bool
	value   string
	offset  int64
}

// viewState is a key's register: its newest record's value and offset
// (offUnknown: stored by a write whose offset nobody learned), or absent
// after a delete (offset: the tombstone's, when known).
type viewState struct {
	present bool
	value   string
	off     int64
}

const offUnknown = -2

// latest is the offset a compare-and-set compares (-1: no value), and
// whether it is known.
func (s viewState) latest() (int64, bool) {
	if !s.present {
		return -1, true
	}
	return s.off, s.off != offUnknown
}

// viewHistory is key's history in porcupine's terms, and the operation
// of each: linearizable gets
// that succeeded, writes that were acknowledged or refused, and writes
// of unknown outcome (completing at the end of time).
func viewHistory(ops []ViewOp, key string, at map[string]int64) ([]porcupine.Operation, []ViewOp) {
	var end int64
	for _, op := range ops {
		end = max(end, op.Complete)
	}
	var h []porcupine.Operation
	var src []ViewOp
	for _, op := range ops {
		if op.Key != key {
			continue
		}
		in := viewInput{kind: op.Kind, key: op.Key, value: op.Value, conditional: op.Conditional, expected: op.Expected}
		out := viewOutput{offset: op.Offset, latest: op.Latest}
		ret := op.Complete
		switch {
		case op.Kind == ViewStaleGet, op.Outcome == OutcomeFail && !op.Refused:
			continue
		case op.Kind == ViewGet:
			out.found, out.value = op.Found, op.Value
		case op.Refused:
			out.refused = true
		case op.Outcome == OutcomeUnknown:
			out.unknown, ret, out.offset = true, end+1, -1
			if off, ok := at[op.Value]; ok && op.Kind != ViewDelete {
				out.offset = off
			}
		}
		h = append(h, porcupine.Operation{ClientId: op.Process, Input: in, Output: out, Call: op.Invoke, Return: ret})
		src = append(src, op)
	}
	return h, src
}

// viewModel is a register per key. A write stores at an offset above the
// key's last (offsets grow within a partition); a conditional one only
// when the key's latest offset is the one expected. A refused one
// changed nothing and names the latest offset, or, when the client
// retried a compare-and-set that had been stored, took effect at the
// offset its refusal names. A write of unknown outcome takes effect when
// its condition holds (porcupine may also place it after everything,
// where it takes no effect anyone saw).
func viewModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return viewState{off: -1} },
		Step: func(state, input, output any) (bool, any) {
			return viewStep(state.(viewState), input.(viewInput), output.(viewOutput))
		},
		Equal: func(a, b any) bool { return a.(viewState) == b.(viewState) },
		DescribeOperation: func(input, output any) string {
			return describeViewOp(input.(viewInput), output.(viewOutput))
		},
		DescribeState: func(state any) string {
			s := state.(viewState)
			if !s.present {
				return "absent"
			}
			return fmt.Sprintf("%s@%d", s.value, s.off)
		},
	}
}

// viewStep is the register's transition.
func viewStep(s viewState, in viewInput, out viewOutput) (bool, viewState) {
	if in.kind == ViewGet {
		if out.found != s.present {
			return false, s
		}
		if !s.present {
			return true, s
		}
		return out.value == s.value && (s.off == offUnknown || out.offset == s.off), s
	}
	latest, known := s.latest()
	holds := !in.conditional || !known || latest == in.expected
	if out.refused {
		if known && latest == out.latest && out.latest != in.expected {
			return true, s // refused: the key was elsewhere
		}
		if !known && out.latest >= 0 && out.latest != in.expected {
			s.off = out.latest // the refusal names the offset nobody knew
			return true, s
		}
		// A retried compare-and-set refused with its own offset.
		return holds && newerOffset(s, out.latest), stored(s, in, out.latest)
	}
	if out.unknown {
		if in.conditional && known && latest != in.expected {
			return true, s // its condition failed: not stored
		}
		return out.offset < 0 || newerOffset(s, out.offset), stored(s, in, out.offset)
	}
	return holds && newerOffset(s, out.offset), stored(s, in, out.offset)
}

// newerOffset: a write at off may follow state s's record.
func newerOffset(s viewState, off int64) bool {
	return off < 0 || s.off < 0 || off > s.off
}

// stored is s after in's write at off (-1: unknown).
func stored(s viewState, in viewInput, off int64) viewState {
	if off < 0 {
		off = offUnknown
	}
	if in.kind == ViewDelete {
		return viewState{off: off}
	}
	return viewState{present: true, value: in.value, off: off}
}

func describeViewOp(in viewInput, out viewOutput) string {
	op := ViewOp{Kind: in.kind, Key: in.key, Conditional: in.conditional, Expected: in.expected, Offset: out.offset,
		Refused: out.refused, Latest: out.latest, Found: out.found, Outcome: OutcomeOK}
	if in.kind == ViewGet {
		op.Value = out.value
	} else {
		op.Value = in.value
	}
	if out.unknown {
		op.Outcome = OutcomeUnknown
	}
	s := op.String()
	// Drop "#0 [0s 0s] p0 ": porcupine shows times and clients itself.
	for range 4 {
		_, s, _ = strings.Cut(s, " ")
	}
	return s
}

// viewFrontier describes where porcupine's longest linearization of a
// key's history stops: the last operation it placed and the operations
// pending there, which no order can place next.
func viewFrontier(h []porcupine.Operation, src []ViewOp, info porcupine.LinearizationInfo) string {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	done := make([]bool, len(h))
	for _, i := range longest {
		done[i] = true
	}
	firstRet := int64(math.MaxInt64)
	for i, o := range h {
		if !done[i] {
			firstRet = min(firstRet, o.Return)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "linearized %d of %d operations", len(longest), len(h))
	if len(longest) > 0 {
		fmt.Fprintf(&b, "; the last placed: %s", src[longest[len(longest)-1]])
	}
	b.WriteString("; pending there:")
	n := 0
	for i, o := range h {
		if !done[i] && o.Call <= firstRet && n < 10 {
			fmt.Fprintf(&b, " {%s}", src[i])
			n++
		}
	}
	return b.String()
}

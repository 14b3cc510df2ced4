package torture

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Result is a checker's conclusion.
type Result string

const (
	Valid   Result = "valid"
	Invalid Result = "invalid"
	// Inconclusive: the checker could not decide (porcupine timed out, or
	// the history lacks what the checker needs, such as a final read).
	Inconclusive Result = "inconclusive"
)

// maxProblems bounds the problems a verdict lists (its counts are complete).
const maxProblems = 20

// Verdict is one checker's judgement of a history.
type Verdict struct {
	Checker string         `json:"checker"`
	Result  Result         `json:"result"`
	Counts  map[string]int `json:"counts"`
	// Problems describes the first violations, one line each.
	Problems []string `json:"problems,omitempty"`
	// Witness is the smallest set of operations that shows the first
	// violation.
	Witness []Op `json:"witness,omitempty"`
	// Artifacts are files the checker wrote (a visualization).
	Artifacts []string `json:"artifacts,omitempty"`
}

func newVerdict(name string) *Verdict {
	return &Verdict{Checker: name, Result: Valid, Counts: map[string]int{}}
}

// fail records a violation: the verdict becomes Invalid, the problem is
// listed while there is room, and the first violation's witness is kept.
func (v *Verdict) fail(witness []Op, format string, args ...any) {
	v.Result = Invalid
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
	if v.Witness == nil && len(witness) > 0 {
		w := slices.Clone(witness)
		slices.SortFunc(w, byInvoke)
		v.Witness = slices.CompactFunc(w, func(a, b Op) bool { return a.ID == b.ID })
	}
}

// inconclusive marks the verdict undecided, unless already Invalid.
func (v *Verdict) inconclusive(format string, args ...any) {
	if v.Result != Invalid {
		v.Result = Inconclusive
	}
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// OK reports whether the verdict is Valid.
func (v *Verdict) OK() bool { return v.Result == Valid }

func (v *Verdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %-12s", v.Checker, v.Result)
	for _, k := range slices.Sorted(maps.Keys(v.Counts)) {
		fmt.Fprintf(&b, " %s=%d", k, v.Counts[k])
	}
	for _, p := range v.Problems {
		fmt.Fprintf(&b, "\n    %s", p)
	}
	if len(v.Witness) > 0 {
		fmt.Fprintf(&b, "\n    witness (%d ops):", len(v.Witness))
		for _, op := range v.Witness {
			fmt.Fprintf(&b, "\n      %s", op)
		}
	}
	for _, a := range v.Artifacts {
		fmt.Fprintf(&b, "\n    see %s", a)
	}
	return b.String()
}

// CheckOptions configure CheckAll.
type CheckOptions struct {
	Linearizable LinearizableOptions
}

// CheckAll runs every checker on ops.
func CheckAll(ops []Op, opts CheckOptions) []*Verdict {
	return []*Verdict{
		CheckLost(ops),
		CheckDuplicates(ops),
		CheckKeyOrder(ops),
		CheckOffsets(ops),
		CheckCommittedOffsets(ops),
		CheckGroupMembers(ops),
		CheckTimeIndex(ops),
		CheckLinearizable(ops, opts.Linearizable),
	}
}

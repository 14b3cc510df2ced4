package torture

import (
	"fmt"
	"slices"
)

// groupPartition names one committed offset.
type groupPartition struct {
	group     string
	partition int32
}

func (g groupPartition) String() string {
	return fmt.Sprintf("group %s partition %d", g.group, g.partition)
}

// CheckCommittedOffsets judges each group's committed offsets as a register
// written by commits and explicit resets and read by observations:
//
//   - no lost commit: an observation shows a value some write (commit or
//     reset, acknowledged or of unknown outcome) could have left there, not
//     one an acknowledged write had overwritten before the observation
//     began (nor "none" after an acknowledged commit);
//   - never backwards: of two observations one after the other, the second
//     is not lower unless a write of that lower value may have landed
//     between them (an explicit reset, or a commit whose outcome was unknown
//     or still in flight).
//
// Counts: commits and resets acknowledged, observations, lost (stale reads),
// backwards (unexplained regressions), reset_regressions (explained ones).
func CheckCommittedOffsets(ops []Op) *Verdict {
	v := newVerdict("committed-offsets")
	writes := map[groupPartition][]Op{}
	observes := map[groupPartition][]Op{}
	for _, op := range ops {
		gp := groupPartition{op.Group, op.Partition}
		switch op.Kind {
		case OpCommit, OpReset:
			if op.Outcome == OutcomeOK {
				v.Counts[string(op.Kind)+"s"]++
			}
			if op.Outcome != OutcomeFail {
				writes[gp] = append(writes[gp], op)
			}
		case OpObserve:
			if op.Outcome == OutcomeOK {
				observes[gp] = append(observes[gp], op)
			}
		}
	}
	v.Counts["commits"] += 0
	v.Counts["lost"] = 0
	v.Counts["backwards"] = 0
	for gp, obs := range observes {
		v.Counts["observations"] += len(obs)
		ws := writes[gp]
		for _, o := range obs {
			checkObservation(v, gp, o, ws)
		}
		slices.SortFunc(obs, byInvoke)
		for i := 1; i < len(obs); i++ {
			prev, o := obs[i-1], obs[i]
			if o.Offset >= prev.Offset || prev.Complete >= o.Invoke {
				continue
			}
			// A write of o's value that may have landed after prev read.
			explained := false
			for _, w := range ws {
				if w.Offset == o.Offset && w.Complete > prev.Invoke && w.Invoke < o.Complete {
					explained = true
					v.Counts[string(w.Kind)+"_regressions"]++
					break
				}
			}
			if !explained {
				v.Counts["backwards"]++
				v.fail([]Op{prev, o}, "%s went backwards: observed %d (op #%d), then %d (op #%d) with no reset or commit of %d in between",
					gp, prev.Offset, prev.ID, o.Offset, o.ID, o.Offset)
			}
		}
	}
	return v
}

// checkObservation: o's value was written by a write not known to be
// overwritten before o began.
func checkObservation(v *Verdict, gp groupPartition, o Op, ws []Op) {
	// overwritten reports whether an acknowledged write other than w, with
	// another value, ran entirely after w and before o.
	overwritten := func(w *Op) *Op {
		for i := range ws {
			w2 := &ws[i]
			if w2.ID == o.ID || (w != nil && w2.ID == w.ID) || w2.Outcome != OutcomeOK || w2.Offset == o.Offset {
				continue
			}
			if (w == nil || w2.Invoke > w.Complete) && w2.Complete < o.Invoke {
				return w2
			}
		}
		return nil
	}
	if o.Offset < 0 {
		if w2 := overwritten(nil); w2 != nil {
			v.Counts["lost"]++
			v.fail([]Op{*w2, o}, "%s: no committed offset observed (op #%d) after commit of %d was acknowledged (op #%d)", gp, o.ID, w2.Offset, w2.ID)
		}
		return
	}
	var cands []Op
	for _, w := range ws {
		if w.Offset == o.Offset && w.Invoke < o.Complete {
			cands = append(cands, w)
		}
	}
	if len(cands) == 0 {
		v.Counts["lost"]++
		v.fail([]Op{o}, "%s: observed %d (op #%d), which no commit or reset wrote before", gp, o.Offset, o.ID)
		return
	}
	var last *Op
	for i := range cands {
		w2 := overwritten(&cands[i])
		if w2 == nil {
			return
		}
		last = w2
	}
	v.Counts["lost"]++
	v.fail([]Op{cands[len(cands)-1], *last, o}, "%s: observed %d (op #%d) although %d was acknowledged after it (op #%d) before the observation began",
		gp, o.Offset, o.ID, last.Offset, last.ID)
}

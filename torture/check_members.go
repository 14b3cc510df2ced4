package torture

import (
	"cmp"
	"math"
	"slices"
)

// genPartition names one partition's committed offset in one generation of
// a group.
type genPartition struct {
	group      string
	partition  int32
	generation int32
}

// CheckGroupMembers judges the groups whose members share partitions (the
// workload's MemberGroup), from what the members report (OpAssign), their
// commits (OpMemberCommit), their reads (OpRead with a Member) and an
// observer's reads of the committed offsets (OpMemberObserve):
//
//   - one owner: no two members report holding a partition in the same
//     generation;
//   - generations go forward: the generations one member process reports
//     never go back, also across coordinator moves (the metadata leader
//     is a nemesis target: NemesisConfig.MetaLeaderShare);
//   - never backwards within a generation: an observed committed offset is
//     not lower than an acknowledged commit or an observation of the same
//     generation that completed before it began, and an acknowledged commit
//     not lower than those before it;
//   - nothing skipped: every acknowledged record below a committed offset
//     (acknowledged, or observed) was delivered to some member by a read
//     that began before the commit or the observation completed. Records
//     retention removed before the final read are exempt.
//
// Counts: assignments, generations, generation_backwards, delivered
// (distinct records read by members), commits (acknowledged), refused
// (commits the group refused), observations, double_owner, backwards,
// skipped (acknowledged records), trimmed.
func CheckGroupMembers(ops []Op) *Verdict {
	v := newVerdict("group-members")
	for _, k := range []string{"assignments", "generations", "generation_backwards", "commits", "observations", "double_owner", "backwards", "skipped"} {
		v.Counts[k] = 0
	}
	checkOwners(v, ops)
	checkGenerationsForward(v, ops)
	checkMonotonic(v, ops)
	checkNotSkipped(v, ops)
	return v
}

// checkOwners: at most one member per partition per generation. A
// member holds what it reported from its report to its next one; two
// holdings of one generation conflict when they overlap in time.
func checkOwners(v *Verdict, ops []Op) {
	type holding struct {
		op  Op
		end int64
	}
	last := map[string]int{} // member -> index of its last holding
	var hs []holding
	gens := map[genPartition]bool{}
	for _, op := range ops {
		if op.Kind != OpAssign {
			continue
		}
		v.Counts["assignments"]++
		gens[genPartition{group: op.Group, generation: op.Generation}] = true
		if i, ok := last[op.Group+"/"+op.Member]; ok {
			hs[i].end = op.Invoke
		}
		last[op.Group+"/"+op.Member] = len(hs)
		hs = append(hs, holding{op, math.MaxInt64})
	}
	v.Counts["generations"] = len(gens)
	held := map[genPartition][]holding{}
	for _, h := range hs {
		for _, p := range h.op.Partitions {
			k := genPartition{h.op.Group, p, h.op.Generation}
			held[k] = append(held[k], h)
		}
	}
	for k, list := range held {
		for i, a := range list {
			for _, b := range list[i+1:] {
				if a.op.Member == b.op.Member || a.end <= b.op.Complete || b.end <= a.op.Complete {
					continue
				}
				v.Counts["double_owner"]++
				v.fail([]Op{a.op, b.op}, "group %s generation %d: partition %d held by member %s (op #%d) and by member %s (op #%d) at once",
					k.group, k.generation, k.partition, a.op.Member, a.op.ID, b.op.Member, b.op.ID)
			}
		}
	}
}

// checkMonotonic: within a generation, a committed offset observed or
// committed is not below one acknowledged or observed before it.
func checkMonotonic(v *Verdict, ops []Op) {
	evidence := map[genPartition][]Op{}
	for _, op := range ops {
		switch {
		case op.Kind == OpMemberCommit && op.Outcome == OutcomeOK:
			v.Counts["commits"]++
		case op.Kind == OpMemberCommit && op.Outcome == OutcomeFail:
			v.Counts["refused"]++
			continue
		case op.Kind == OpMemberObserve && op.Outcome == OutcomeOK:
			v.Counts["observations"]++
			if op.Generation < 0 || op.Offset < 0 {
				continue
			}
		default:
			continue
		}
		if op.Outcome == OutcomeOK {
			k := genPartition{op.Group, op.Partition, op.Generation}
			evidence[k] = append(evidence[k], op)
		}
	}
	for k, ev := range evidence {
		byComplete := slices.Clone(ev)
		slices.SortFunc(byComplete, func(a, b Op) int { return cmp.Compare(a.Complete, b.Complete) })
		slices.SortFunc(ev, byInvoke)
		var highest *Op // the highest offset among ops completed so far
		i := 0
		for _, op := range ev {
			for ; i < len(byComplete) && byComplete[i].Complete < op.Invoke; i++ {
				if highest == nil || byComplete[i].Offset > highest.Offset {
					highest = &byComplete[i]
				}
			}
			if highest != nil && op.Offset < highest.Offset {
				v.Counts["backwards"]++
				v.fail([]Op{*highest, op}, "group %s partition %d went backwards in generation %d: %s %d (op #%d) after %s %d (op #%d)",
					k.group, k.partition, k.generation, op.Kind, op.Offset, op.ID, highest.Kind, highest.Offset, highest.ID)
			}
		}
	}
}

// groupPart names one partition of a group.
type groupPart struct {
	group     string
	partition int32
}

// deliveries returns, by group, the first member read of each value, and
// by group and partition the acknowledged commits and observations that
// passed an offset above 0.
func deliveries(ops []Op) (map[string]map[string]Op, map[groupPart][]Op) {
	delivered := map[string]map[string]Op{} // group -> value -> the first read of it
	passes := map[groupPart][]Op{}
	for _, op := range ops {
		switch {
		case op.Kind == OpRead && op.Outcome == OutcomeOK && op.Member != "":
			if delivered[op.Group] == nil {
				delivered[op.Group] = map[string]Op{}
			}
			for _, r := range op.Records {
				if first, ok := delivered[op.Group][r.Value]; !ok || op.Invoke < first.Invoke {
					delivered[op.Group][r.Value] = op
				}
			}
		case (op.Kind == OpMemberCommit || op.Kind == OpMemberObserve) && op.Outcome == OutcomeOK && op.Offset > 0:
			k := groupPart{op.Group, op.Partition}
			passes[k] = append(passes[k], op)
		}
	}
	return delivered, passes
}

// checkNotSkipped: every acknowledged record below a committed offset was
// delivered to a member before the offset was committed.
func checkNotSkipped(v *Verdict, ops []Op) {
	acked := map[int32][]Op{}
	for _, op := range ops {
		if op.Acked() {
			acked[op.Partition] = append(acked[op.Partition], op)
		}
	}
	for _, as := range acked {
		slices.SortFunc(as, func(a, b Op) int { return cmp.Compare(a.Offset, b.Offset) })
	}
	delivered, passes := deliveries(ops)
	for _, d := range delivered {
		v.Counts["delivered"] += len(d)
	}
	_, finals := finalReads(ops)
	trimmed, reported := 0, map[int]bool{} // acknowledged produces found skipped
	for k, ps := range passes {
		as := acked[k.partition]
		// due[i]: when the records up to as[i] had all been delivered
		// (math.MaxInt64: one never was).
		due := make([]int64, len(as))
		var worst int64 = -1
		for i, a := range as {
			switch d, ok := delivered[k.group][a.Value]; {
			case ok:
				worst = max(worst, d.Invoke)
			case skipped(finals[k.partition], a.Offset):
				trimmed++
			default:
				worst = math.MaxInt64
			}
			due[i] = worst
		}
		for _, p := range ps {
			n, _ := slices.BinarySearchFunc(as, p.Offset, func(a Op, off int64) int { return cmp.Compare(a.Offset, off) })
			if n == 0 || due[n-1] < p.Complete {
				continue
			}
			// The first record below p.Offset not delivered before p.
			for _, a := range as[:n] {
				d, ok := delivered[k.group][a.Value]
				if ok && d.Invoke < p.Complete || !ok && skipped(finals[k.partition], a.Offset) {
					continue
				}
				if reported[a.ID] {
					break
				}
				reported[a.ID] = true
				v.Counts["skipped"]++
				witness := []Op{a, p}
				if ok {
					witness = append(witness, d)
				}
				v.fail(witness, "group %s partition %d: %s %d (op #%d) passed %s at offset %d (op #%d), which no member was delivered before",
					k.group, k.partition, p.Kind, p.Offset, p.ID, a.Value, a.Offset, a.ID)
				break
			}
		}
	}
	if trimmed > 0 {
		v.Counts["trimmed"] = trimmed
	}
}

// checkGenerationsForward: the generations one member process reports,
// in the order it reports them, never go back. A group's generations only
// grow, across coordinator moves too (each is recorded before members
// learn it, and a new coordinator takes the members over in theirs).
func checkGenerationsForward(v *Verdict, ops []Op) {
	type key struct {
		group   string
		process int
	}
	last := map[key]Op{}
	for _, op := range ops {
		if op.Kind != OpAssign {
			continue
		}
		k := key{op.Group, op.Process}
		if prev, ok := last[k]; ok && op.Generation < prev.Generation {
			v.Counts["generation_backwards"]++
			v.fail([]Op{prev, op}, "group %s: member process %d reported generation %d (member %s, op #%d) after generation %d (member %s, op #%d)",
				op.Group, op.Process, op.Generation, op.Member, op.ID, prev.Generation, prev.Member, prev.ID)
		}
		last[k] = op
	}
}

package broker

import (
	"cmp"
	"slices"
)

// The server-side assignors of consumer groups (KIP-848): "uniform", a
// sticky balanced one (the default), and "range", each topic's partitions
// in contiguous ranges over the members that subscribe to it.

// tp is one partition of a topic.
type tp struct {
	topic string
	p     int32
}

// tpSet is a set of partitions.
type tpSet map[tp]bool

func (s tpSet) minus(o tpSet) tpSet {
	out := tpSet{}
	for k := range s {
		if !o[k] {
			out[k] = true
		}
	}
	return out
}

func (s tpSet) and(o tpSet) tpSet {
	out := tpSet{}
	for k := range s {
		if o[k] {
			out[k] = true
		}
	}
	return out
}

func (s tpSet) equal(o tpSet) bool {
	return len(s) == len(o) && len(s.minus(o)) == 0
}

func (s tpSet) sorted() []tp {
	out := make([]tp, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.SortFunc(out, cmpTP)
	return out
}

func cmpTP(a, b tp) int {
	if c := cmp.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// Assignor names.
const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

// assignInput is what an assignor assigns: the members (sorted), the
// topics each subscribes to (those that exist), their partition counts,
// and the previous target.
type assignInput struct {
	members []string
	subs    map[string]map[string]bool
	counts  map[string]int32
	prev    map[string]tpSet
}

func assign(name string, in assignInput) map[string]tpSet {
	if name == assignorRange {
		return assignRange(in)
	}
	return assignUniform(in)
}

// assignRange gives each topic's partitions to its subscribers in
// contiguous ranges, the first ones one more when they do not divide.
func assignRange(in assignInput) map[string]tpSet {
	out := map[string]tpSet{}
	for _, m := range in.members {
		out[m] = tpSet{}
	}
	for _, t := range sortedKeys(in.counts) {
		var subs []string
		for _, m := range in.members {
			if in.subs[m][t] {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := in.counts[t]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		p := int32(0)
		for i, m := range subs {
			k := per
			if int32(i) < extra {
				k++
			}
			for ; k > 0; k-- {
				out[m][tp{t, p}] = true
				p++
			}
		}
	}
	return out
}

// assignUniform balances the partitions over the members (no member more
// than one above another that could take the same partitions), keeping
// each where it was when that keeps the balance: a member keeps up to
// floor(partitions/members) of its previous ones, then each partition
// left goes to its previous owner while that is below the ceiling and
// fewer members than partitions%members are above the floor (more would
// leave another member below it), else to the subscriber with the
// fewest.
func assignUniform(in assignInput) map[string]tpSet {
	out := map[string]tpSet{}
	for _, m := range in.members {
		out[m] = tpSet{}
	}
	if len(in.members) == 0 {
		return out
	}
	var all []tp
	for _, t := range sortedKeys(in.counts) {
		for p := int32(0); p < in.counts[t]; p++ {
			all = append(all, tp{t, p})
		}
	}
	floor := len(all) / len(in.members)
	extra := len(all) % len(in.members) // how many members may hold floor+1
	taken := tpSet{}
	prevOwner := map[tp]string{}
	for _, m := range in.members {
		for _, x := range in.prev[m].sorted() {
			if !in.subs[m][x.topic] || in.counts[x.topic] <= x.p {
				continue
			}
			prevOwner[x] = m
			if len(out[m]) < floor && !taken[x] {
				out[m][x], taken[x] = true, true
			}
		}
	}
	for _, x := range all {
		if taken[x] {
			continue
		}
		if o, ok := prevOwner[x]; ok && (len(out[o]) < floor || len(out[o]) == floor && extra > 0) {
			if len(out[o]) == floor {
				extra--
			}
			out[o][x] = true
			continue
		}
		best := ""
		for _, m := range in.members {
			if in.subs[m][x.topic] && (best == "" || len(out[m]) < len(out[best])) {
				best = m
			}
		}
		if best != "" {
			if len(out[best]) == floor {
				extra--
			}
			out[best][x] = true
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

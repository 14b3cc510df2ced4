package torture

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// CheckShare judges the share-group workload's history:
//
//   - a delivery's count never passes the group's delivery limit, and no
//     two deliveries of a record share a count (each acquisition counts
//     one, durably, before the record is sent: a count seen twice is a
//     record held by two members at once, or handed out again after a
//     lost acquisition);
//   - a delivery returns the value its offset was acknowledged with;
//   - a record is accepted at most once, and never both accepted and
//     rejected (counting acknowledgements the broker answered applied);
//   - no record is delivered again after an applied accept or reject:
//     no delivery of it has a higher count than the one acknowledged;
//   - after the drain every acknowledged record is accounted for: accepted
//     or rejected (whatever the broker answered: franz-go sends an
//     acknowledgement again when its request may not have arrived, and
//     the broker refuses the second copy of one it applied, so a refusal
//     does not prove the first was not applied), or delivered at the
//     limit (then archived unless accepted). A record none of these is
//     lost, unless at most one of its deliveries could have gone unseen (a
//     response lost with its node, which is no fault of the broker: the
//     record is archived at the limit after one unseen delivery): those
//     are counted as archived_unseen. A share partition whose start offset
//     is known and below the partition's end after the drain holds
//     records never finished;
//   - when the dead-letter topic was read after the drain (dead letters
//     are on: a record rejected or out of deliveries is appended there),
//     each acknowledged record is accepted or dead-lettered, once: a
//     record neither accepted (an accept sent, whatever its answer) nor
//     in the dead-letter topic is lost, whatever deliveries went unseen;
//     one dead-lettered twice, or both dead-lettered and answered an
//     applied accept, is a violation, and a dead letter carries its
//     source record's value and a delivery count within the limit;
//   - with per-key ordering (h.Keys > 0), no record is handed out while
//     an earlier record of its key in its partition is not done: a
//     record delivered again by a poll that began after the poll that
//     returned a later record of its key was still in flight when that
//     later record was handed out (done records are never delivered
//     again), which per-key ordering forbids. Polls that overlap prove
//     nothing either way and are not judged.
func CheckShare(h *ShareHistory) *Verdict {
	v := newVerdict("share")
	x := newShareIndex(h, v)
	x.checkDeliveries()
	x.checkAcks()
	x.checkFinal()
	if h.Keys > 0 {
		x.checkOrder()
	}
	return v
}

// checkOrder checks per-key ordering: for each partition and key, in
// offset order, the latest poll start among the deliveries of lower
// offsets must not be after the end of a delivery's poll.
func (x *shareIndex) checkOrder() {
	type lane struct {
		p   int32
		key string
	}
	lanes := map[lane][]*ShareDelivery{}
	for i := range x.h.Deliveries {
		d := &x.h.Deliveries[i]
		var seq int
		if _, err := fmt.Sscanf(d.Value, "s%d", &seq); err != nil {
			x.v.fail(nil, "%d/%d delivered with value %q, not one of the ordered workload's", d.Partition, d.Offset, d.Value)
			continue
		}
		l := lane{d.Partition, shareKey(seq, x.h.Keys)}
		lanes[l] = append(lanes[l], d)
	}
	x.v.Counts["order_lanes"] = len(lanes)
	for _, l := range slices.SortedFunc(maps.Keys(lanes), func(a, b lane) int {
		return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.key, b.key))
	}) {
		ds := lanes[l]
		slices.SortStableFunc(ds, func(a, b *ShareDelivery) int { return cmp.Compare(a.Offset, b.Offset) })
		var latest *ShareDelivery // the latest-starting delivery of a lower offset
		for i := 0; i < len(ds); {
			j := i
			for j < len(ds) && ds[j].Offset == ds[i].Offset {
				if d := ds[j]; latest != nil && latest.Invoke > d.Time {
					x.v.fail(nil, "partition %d, key %s: offset %d handed out to %s (delivery %d, poll %d-%d) while offset %d was in flight: delivered again to %s (delivery %d) by a poll begun at %d",
						l.p, l.key, d.Offset, d.Member, d.Count, d.Invoke, d.Time, latest.Offset, latest.Member, latest.Count, latest.Invoke)
				} else if latest != nil {
					x.v.Counts["order_checked"]++
				}
				j++
			}
			for _, d := range ds[i:j] {
				if latest == nil || d.Invoke > latest.Invoke {
					latest = d
				}
			}
			i = j
		}
	}
}

type shareRef struct {
	p   int32
	off int64
}

func (r shareRef) String() string { return fmt.Sprintf("%d/%d", r.p, r.off) }

// shareTerminal is an applied accept or reject of a record.
type shareTerminal struct {
	ack   *ShareAck
	entry ShareAckEntry
}

type shareIndex struct {
	h        *ShareHistory
	v        *Verdict
	produced map[shareRef]*ShareProduce // acknowledged produces
	values   map[string]bool            // every value written, whatever its outcome
	byRecord map[shareRef][]*ShareDelivery
	terminal map[shareRef][]shareTerminal
	resolved map[shareRef]bool // an accept or reject sent, whatever its answer
	accepted map[shareRef]bool // an accept sent, whatever its answer
	dead     map[shareRef][]*ShareDeadLetter
}

func newShareIndex(h *ShareHistory, v *Verdict) *shareIndex {
	x := &shareIndex{h: h, v: v, produced: map[shareRef]*ShareProduce{}, values: map[string]bool{},
		byRecord: map[shareRef][]*ShareDelivery{}, terminal: map[shareRef][]shareTerminal{}, resolved: map[shareRef]bool{},
		accepted: map[shareRef]bool{}, dead: map[shareRef][]*ShareDeadLetter{}}
	for i := range h.Produces {
		p := &h.Produces[i]
		v.Counts["produce_"+string(p.Outcome)]++
		x.values[p.Value] = true
		if p.Outcome != OutcomeOK {
			continue
		}
		r := shareRef{p.Partition, p.Offset}
		if prev, dup := x.produced[r]; dup {
			v.fail(nil, "offset %s acknowledged for %q and %q", r, prev.Value, p.Value)
		}
		x.produced[r] = p
	}
	for i := range h.Deliveries {
		d := &h.Deliveries[i]
		r := shareRef{d.Partition, d.Offset}
		x.byRecord[r] = append(x.byRecord[r], d)
	}
	for i := range h.DeadLetters {
		d := &h.DeadLetters[i]
		r := shareRef{d.Partition, d.Offset}
		x.dead[r] = append(x.dead[r], d)
	}
	v.Counts["deliveries"] = len(h.Deliveries)
	v.Counts["crashes"] = h.Crashes
	return x
}

// checkDeliveries checks each delivery's count and value.
func (x *shareIndex) checkDeliveries() {
	for _, r := range slices.SortedFunc(maps.Keys(x.byRecord), cmpShareRef) {
		ds := x.byRecord[r]
		seen := map[int32]*ShareDelivery{}
		for _, d := range ds {
			if d.Count > 1 {
				x.v.Counts["redeliveries"]++
			}
			if d.Count > x.h.Limit {
				x.v.fail(nil, "%s delivered to %s with delivery count %d, past the limit %d", r, d.Member, d.Count, x.h.Limit)
			}
			if prev, dup := seen[d.Count]; dup {
				x.v.fail(nil, "%s delivered twice with delivery count %d: to %s (poll %d-%d) and to %s (poll %d-%d)",
					r, d.Count, prev.Member, prev.Invoke, prev.Time, d.Member, d.Invoke, d.Time)
			}
			seen[d.Count] = d
			if p, ok := x.produced[r]; ok && p.Value != d.Value {
				x.v.fail(nil, "%s delivered with value %q, acknowledged with %q", r, d.Value, p.Value)
			} else if !ok && !x.values[d.Value] {
				x.v.fail(nil, "%s delivered with value %q, which no producer wrote", r, d.Value)
			}
		}
	}
}

// checkAcks counts the acknowledgements and checks the applied accepts
// and rejects: one per record, and no delivery after one.
func (x *shareIndex) checkAcks() {
	for i := range x.h.Acks {
		a := &x.h.Acks[i]
		for _, e := range a.Entries {
			x.v.Counts["ack_"+e.Type+"_"+string(a.Outcome)]++
			if e.Type == ShareRelease {
				continue
			}
			r := shareRef{a.Partition, e.Offset}
			x.resolved[r] = true
			if e.Type == ShareAccept {
				x.accepted[r] = true
			}
			if a.Outcome == OutcomeOK {
				x.terminal[r] = append(x.terminal[r], shareTerminal{a, e})
			}
		}
	}
	for _, r := range slices.SortedFunc(maps.Keys(x.terminal), cmpShareRef) {
		ts := x.terminal[r]
		if len(ts) > 1 {
			x.v.fail(nil, "%s acknowledged twice: %s by %s (delivery %d, at %d) and %s by %s (delivery %d, at %d)", r,
				ts[0].entry.Type, ts[0].ack.Member, ts[0].entry.Count, ts[0].ack.Complete,
				ts[1].entry.Type, ts[1].ack.Member, ts[1].entry.Count, ts[1].ack.Complete)
		}
		first := slices.MinFunc(ts, func(a, b shareTerminal) int { return cmp.Compare(a.entry.Count, b.entry.Count) })
		for _, d := range x.byRecord[r] {
			if d.Count > first.entry.Count {
				x.v.fail(nil, "%s delivered to %s (delivery %d, poll %d-%d) after %s %sed it (delivery %d, answered at %d)",
					r, d.Member, d.Count, d.Invoke, d.Time, first.ack.Member, first.entry.Type, first.entry.Count, first.ack.Complete)
			}
		}
	}
}

// checkFinal accounts for every acknowledged record after the drain.
func (x *shareIndex) checkFinal() {
	if len(x.h.Final) == 0 {
		x.v.inconclusive("no final state: the drain did not run")
		return
	}
	start := map[int32]int64{}
	for _, f := range x.h.Final {
		if f.Start < 0 {
			continue
		}
		x.v.Counts["final_starts_known"]++
		start[f.Partition] = f.Start
		if f.Start < f.End {
			x.v.fail(nil, "partition %d: share start offset %d below its end %d after the drain: records never finished", f.Partition, f.Start, f.End)
		}
	}
	if x.h.DeadLettersRead {
		x.checkDeadLetters()
		return
	}
	for _, r := range slices.SortedFunc(maps.Keys(x.produced), cmpShareRef) {
		if x.resolved[r] {
			continue
		}
		switch top := x.top(r); {
		case top >= x.h.Limit:
			x.v.Counts["archived_at_limit"]++
		case top == x.h.Limit-1:
			x.v.Counts["archived_unseen"]++
		default:
			s, known := start[r.p]
			x.v.fail(nil, "%s (%q) lost: never accepted nor rejected, delivered %d time(s) of %d (final start known %v: %d)",
				r, x.produced[r].Value, top, x.h.Limit, known, s)
		}
	}
}

// checkDeadLetters accounts for every acknowledged record with the
// dead-letter topic read after the drain, and checks its records.
func (x *shareIndex) checkDeadLetters() {
	x.v.Counts["dead_letters"] = len(x.h.DeadLetters)
	for _, r := range slices.SortedFunc(maps.Keys(x.dead), cmpShareRef) {
		ds := x.dead[r]
		if len(ds) > 1 {
			x.v.fail(nil, "%s dead-lettered %d times", r, len(ds))
		}
		d := ds[0]
		if p, ok := x.produced[r]; ok && p.Value != d.Value {
			x.v.fail(nil, "%s dead-lettered with value %q, acknowledged with %q", r, d.Value, p.Value)
		} else if !ok && !x.values[d.Value] {
			x.v.fail(nil, "%s dead-lettered with value %q, which no producer wrote", r, d.Value)
		}
		if d.Count < 1 || d.Count > x.h.Limit {
			x.v.fail(nil, "%s dead-lettered with delivery count %d (limit %d)", r, d.Count, x.h.Limit)
		}
		for _, t := range x.terminal[r] {
			if t.entry.Type == ShareAccept {
				x.v.fail(nil, "%s both accepted (by %s, delivery %d, answered at %d) and dead-lettered (delivery count %d)",
					r, t.ack.Member, t.entry.Count, t.ack.Complete, d.Count)
			}
		}
		if x.top(r) < d.Count {
			x.v.Counts["dead_lettered_after_unseen_deliveries"]++
		}
	}
	for _, r := range slices.SortedFunc(maps.Keys(x.produced), cmpShareRef) {
		switch {
		case x.accepted[r]:
		case len(x.dead[r]) > 0:
			x.v.Counts["dead_lettered"]++
		default:
			x.v.fail(nil, "%s (%q) lost: neither accepted nor in the dead-letter topic, delivered %d time(s) of %d (reject sent: %v)",
				r, x.produced[r].Value, x.top(r), x.h.Limit, x.resolved[r])
		}
	}
}

// top is the highest delivery count r was seen with (0: never delivered).
func (x *shareIndex) top(r shareRef) int32 {
	var top int32
	for _, d := range x.byRecord[r] {
		top = max(top, d.Count)
	}
	return top
}

// shareUnsettled counts the acknowledged records of h that CheckShare
// would call lost now: neither accepted nor rejected, and seen at fewer
// than limit-1 deliveries. The drain goes on while there are some.
func shareUnsettled(h *ShareHistory) int {
	x := newShareIndex(h, newVerdict("share"))
	x.checkAcks()
	n := 0
	for r := range x.produced {
		if !x.resolved[r] && x.top(r) < h.Limit-1 {
			n++
		}
	}
	return n
}

func cmpShareRef(a, b shareRef) int {
	return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.off, b.off))
}

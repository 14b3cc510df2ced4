package torture

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// position is a record's place in the log.
type position struct {
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d/%d", p.partition, p.offset) }

// finalReads returns, per partition, the final read's offset -> value and
// the final read ops.
func finalReads(ops []Op) (map[int32]map[int64]string, map[int32][]Op) {
	vals := map[int32]map[int64]string{}
	byPart := map[int32][]Op{}
	for _, op := range ops {
		if op.Kind != OpRead || !op.Final || op.Outcome != OutcomeOK {
			continue
		}
		if vals[op.Partition] == nil {
			vals[op.Partition] = map[int64]string{}
		}
		for _, r := range op.Records {
			vals[op.Partition][r.Offset] = r.Value
		}
		byPart[op.Partition] = append(byPart[op.Partition], op)
	}
	return vals, byPart
}

// readCovering returns the first of reads that returned offset.
func readCovering(reads []Op, offset int64) []Op {
	for _, r := range reads {
		for _, rec := range r.Records {
			if rec.Offset == offset {
				return []Op{r}
			}
		}
	}
	return nil
}

// CheckLost: every acknowledged record is in the final read, at the offset
// its acknowledgement gave, unless retention removed it (its offset is below
// where the final read began). Counts: acknowledged, lost, trimmed, and the
// records of produces with an unknown or failed outcome found stored (not
// violations).
func CheckLost(ops []Op) *Verdict {
	v := newVerdict("lost")
	final, finalOps := finalReads(ops)
	stored := map[string]bool{}
	for _, m := range final {
		for _, val := range m {
			stored[val] = true
		}
	}
	v.Counts["acknowledged"] = 0
	v.Counts["lost"] = 0
	v.Counts["stored_unknown"] = 0
	for _, op := range ops {
		if op.Kind != OpProduce {
			continue
		}
		if !op.Acked() {
			if stored[op.Value] {
				v.Counts["stored_"+string(op.Outcome)]++
			}
			continue
		}
		v.Counts["acknowledged"]++
		if op.Duplicate {
			v.Counts["acknowledged_as_retry"]++
		}
		if op.Offset < 0 {
			// A retry answered as a duplicate of a batch too old for
			// its offsets to be remembered: the record must be stored
			// somewhere. Not a trimmed offset: -1 is below every log
			// start, so skipped would call it trimmed (and a loss
			// would be counted so).
			if stored[op.Value] {
				v.Counts["acknowledged_without_offset"]++
			} else {
				v.Counts["lost"]++
				v.fail([]Op{op}, "lost: %s acknowledged without an offset (a duplicate), in no final read", op.Value)
			}
			continue
		}
		m, ok := final[op.Partition]
		if !ok {
			v.inconclusive("no final read of partition %d", op.Partition)
			continue
		}
		got, ok := m[op.Offset]
		switch {
		case !ok && skipped(finalOps[op.Partition], op.Offset):
			v.Counts["trimmed"]++ // removed by retention before the final read
		case !ok:
			v.Counts["lost"]++
			v.fail([]Op{op}, "lost: %s acknowledged at %d/%d, offset absent from the final read (%s)",
				op.Value, op.Partition, op.Offset, finalExtent(finalOps[op.Partition]))
		case got != op.Value:
			v.Counts["lost"]++
			v.fail(append([]Op{op}, readCovering(finalOps[op.Partition], op.Offset)...),
				"lost: %s acknowledged at %d/%d, the final read has %s there", op.Value, op.Partition, op.Offset, got)
		}
	}
	if v.Result == Inconclusive {
		// A partition without a final read cannot be judged: say so once.
		v.Problems = slices.Compact(v.Problems)
	}
	return v
}

// skipped reports whether the final read of a partition never covered
// offset and went past it: the offset was below the log start when the
// final read began, or retention removed it during the final read (which
// then moved to the new log start).
func skipped(reads []Op, offset int64) bool {
	past := false
	for _, r := range reads {
		if r.From <= offset && offset < r.Next {
			return false
		}
		past = past || r.From > offset
	}
	return past
}

func finalExtent(reads []Op) string {
	if len(reads) == 0 {
		return "no final read"
	}
	lo, hi := reads[0].From, reads[0].Next
	for _, r := range reads {
		lo, hi = min(lo, r.From), max(hi, r.Next)
	}
	return fmt.Sprintf("final read covered %d to %d", lo, hi)
}

// CheckDuplicates: no value is stored at two offsets, across every read.
// Counts: distinct values read, duplicated values.
func CheckDuplicates(ops []Op) *Verdict {
	v := newVerdict("duplicates")
	produced := map[string]Op{}
	for _, op := range ops {
		if op.Kind == OpProduce {
			produced[op.Value] = op
		}
	}
	where := map[string]position{}
	whereOp := map[string]Op{}
	dup := map[string]bool{}
	for _, op := range ops {
		if op.Kind != OpRead || op.Outcome != OutcomeOK {
			continue
		}
		for _, r := range op.Records {
			pos := position{op.Partition, r.Offset}
			first, seen := where[r.Value]
			if !seen {
				where[r.Value], whereOp[r.Value] = pos, op
				continue
			}
			if first != pos && !dup[r.Value] {
				dup[r.Value] = true
				w := []Op{whereOp[r.Value], op}
				if p, ok := produced[r.Value]; ok {
					w = append(w, p)
				}
				v.fail(w, "duplicate: %s at %s and at %s", r.Value, first, pos)
			}
		}
	}
	v.Counts["read"] = len(where)
	v.Counts["duplicated"] = len(dup)
	return v
}

// CheckKeyOrder: the acknowledged records of one key are stored in the order
// their producer sequenced them and in the order they were acknowledged.
// Order is judged on the final read where it has the record, else on the
// acknowledged offset. Counts: keys, acknowledged records, reordered pairs.
func CheckKeyOrder(ops []Op) *Verdict {
	v := newVerdict("key-order")
	final, _ := finalReads(ops)
	storedAt := map[string]position{}
	for p, m := range final {
		for off, val := range m {
			storedAt[val] = position{p, off}
		}
	}
	byKey := map[string][]Op{}
	for _, op := range ops {
		if op.Acked() {
			byKey[op.Key] = append(byKey[op.Key], op)
		}
	}
	at := func(op Op) position {
		if pos, ok := storedAt[op.Value]; ok {
			return pos
		}
		return position{op.Partition, op.Offset}
	}
	reordered := 0
	check := func(key, order string, acked []Op) {
		for i := 1; i < len(acked); i++ {
			a, b := acked[i-1], acked[i]
			pa, pb := at(a), at(b)
			if pa.partition != pb.partition {
				reordered++
				v.fail([]Op{a, b}, "key %s: %s at %s and %s at %s, in different partitions", key, a.Value, pa, b.Value, pb)
			} else if pa.offset >= pb.offset {
				reordered++
				v.fail([]Op{a, b}, "key %s: %s before %s in %s order, stored at %s and %s", key, a.Value, b.Value, order, pa, pb)
			}
		}
	}
	acked := 0
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		list := byKey[key]
		acked += len(list)
		slices.SortFunc(list, func(a, b Op) int { return cmp.Compare(a.Seq, b.Seq) })
		check(key, "sequence", list)
		slices.SortStableFunc(list, func(a, b Op) int { return cmp.Compare(a.Complete, b.Complete) })
		check(key, "acknowledgement", list)
	}
	v.Counts["keys"] = len(byKey)
	v.Counts["acknowledged"] = acked
	v.Counts["reordered"] = reordered
	return v
}

// CheckOffsets: an offset never holds two different values, across every
// acknowledgement and every read; and a read returns contiguous offsets from
// where it started, with the reader's next position right after them.
// Counts: offsets seen, reused offsets, reads with gaps.
func CheckOffsets(ops []Op) *Verdict {
	v := newVerdict("offsets")
	type holder struct {
		value string
		op    Op
	}
	seen := map[position]holder{}
	reused := map[position]bool{}
	note := func(pos position, val string, op Op) {
		h, ok := seen[pos]
		if !ok {
			seen[pos] = holder{val, op}
			return
		}
		if h.value != val && !reused[pos] {
			reused[pos] = true
			v.fail([]Op{h.op, op}, "offset %s reused: %s (op #%d) and %s (op #%d)", pos, h.value, h.op.ID, val, op.ID)
		}
	}
	gaps := 0
	for _, op := range ops {
		switch {
		case op.Acked():
			note(position{op.Partition, op.Offset}, op.Value, op)
		case op.Kind == OpRead && op.Outcome == OutcomeOK:
			want := op.From
			for _, r := range op.Records {
				note(position{op.Partition, r.Offset}, r.Value, op)
				if r.Offset != want {
					break
				}
				want++
			}
			if want != op.From+int64(len(op.Records)) || op.Next != want {
				gaps++
				v.fail([]Op{op}, "read of %d from %d is not contiguous: %d records, next %d", op.Partition, op.From, len(op.Records), op.Next)
			}
		}
	}
	v.Counts["offsets"] = len(seen)
	v.Counts["reused"] = len(reused)
	v.Counts["gaps"] = gaps
	return v
}

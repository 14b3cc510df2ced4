package torture

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// expirySlack is how much earlier than delete.retention after its write
// began a tombstone is taken to have possibly expired: record timestamps
// are whole milliseconds of the wall clock, the history's times the
// monotonic clock's.
const expirySlack = 500 * time.Millisecond

// kvID names one write: a key and its sequence number.
type kvID struct {
	key string
	seq int64
}

// kvWrites indexes the writes of a KVHistory.
type kvWrites struct {
	byID  map[kvID]KVOp
	byKey map[string][]KVOp // in sequence order
	// acked is, per key, the acknowledged writes in completion order,
	// and maxSeq[i] the highest sequence among acked[:i+1].
	acked  map[string][]KVOp
	maxSeq map[string][]int64
}

func indexKVWrites(ops []KVOp, v *Verdict) *kvWrites {
	x := &kvWrites{byID: map[kvID]KVOp{}, byKey: map[string][]KVOp{}, acked: map[string][]KVOp{}, maxSeq: map[string][]int64{}}
	for _, op := range ops {
		if op.Kind == KVScan {
			continue
		}
		v.Counts[string(op.Kind)+"_"+string(op.Outcome)]++
		x.byID[kvID{op.Key, op.Seq}] = op
		x.byKey[op.Key] = append(x.byKey[op.Key], op)
		if op.Outcome == OutcomeOK {
			x.acked[op.Key] = append(x.acked[op.Key], op)
		}
	}
	for k, ws := range x.byKey {
		slices.SortFunc(ws, func(a, b KVOp) int { return cmp.Compare(a.Seq, b.Seq) })
		x.byKey[k] = ws
	}
	for k, ws := range x.acked {
		slices.SortFunc(ws, func(a, b KVOp) int { return cmp.Compare(a.Complete, b.Complete) })
		m := make([]int64, len(ws))
		for i, w := range ws {
			m[i] = w.Seq
			if i > 0 {
				m[i] = max(m[i], m[i-1])
			}
		}
		x.acked[k], x.maxSeq[k] = ws, m
	}
	return x
}

// newestAckedBefore is key's acknowledged write of the highest sequence
// among those acknowledged before t (any time when t < 0).
func (x *kvWrites) newestAckedBefore(key string, t int64) (KVOp, bool) {
	ws := x.acked[key]
	n := len(ws)
	if t >= 0 {
		n = sort.Search(len(ws), func(i int) bool { return ws[i].Complete >= t })
	}
	if n == 0 {
		return KVOp{}, false
	}
	return x.byID[kvID{key, x.maxSeq[key][n-1]}], true
}

// newerDuring reports whether a write of key after seq may have been
// appended after a scan from start to end began, and before it ended: it
// did not fail, began before end, and was acknowledged after start or
// has an unknown outcome.
func (x *kvWrites) newerDuring(key string, seq, start, end int64) bool {
	for _, w := range x.byKey[key] {
		if w.Seq > seq && w.Invoke < end && (w.Outcome == OutcomeUnknown || w.Outcome == OutcomeOK && w.Complete > start) {
			return true
		}
	}
	return false
}

// CheckCompacted judges the compacted workload's history (deleteRetention
// is the topic's delete.retention):
//
//   - every record read is a write that was made and did not fail, begun
//     before the scan ended, and decodes;
//   - within a scan, each partition's offsets increase, and each key's
//     records, in offset order, increase in sequence (and stay in one
//     partition);
//   - an offset never holds two writes, across every scan and
//     acknowledgement, and a write is never at two offsets;
//   - in the final scans, every key holds its newest acknowledged write or
//     a newer one: nothing when that write is a tombstone that may have
//     expired (delete.retention after it began), never an older value; a
//     value older than an acknowledged tombstone that expired (a key come
//     back) is a violation when every final scan shows it (a scan that a
//     clean overtakes may read a value and miss its tombstone, as in Kafka);
//   - a scan during the run holds, for every key, the newest write
//     acknowledged before it began or a newer one, unless a newer write
//     may have been appended while it ran (the scan may have missed both:
//     the newer one past its end, the older one compacted away) or the
//     write is a tombstone that may have expired.
//
// Counts: writes by kind and outcome, scans, keys, acknowledged writes
// the final scan no longer holds (removed), keys whose tombstone expired
// (deleted), final records, offsets the final scan stepped over (gaps),
// scans excused by a newer write (raced).
func CheckCompacted(ops []KVOp, deleteRetention time.Duration) *Verdict {
	v := newVerdict("compacted")
	x := indexKVWrites(ops, v)
	pos := kvPositions{at: map[position]kvID{}, where: map[kvID]position{}}
	for _, op := range ops {
		if op.Kind != KVScan && op.Outcome == OutcomeOK && op.Offset >= 0 {
			pos.note(v, position{op.Partition, op.Offset}, kvID{op.Key, op.Seq})
		}
	}
	var finals, scans []KVOp
	for _, op := range ops {
		if op.Kind != KVScan || op.Outcome != OutcomeOK {
			continue
		}
		checkScanShape(v, x, &pos, op)
		if op.Final > 0 {
			finals = append(finals, op)
		} else {
			scans = append(scans, op)
		}
	}
	v.Counts["scans"] = len(scans)
	v.Counts["keys"] = len(x.byKey)
	checkFinalScans(v, x, finals, deleteRetention)
	checkScansNewest(v, x, scans, deleteRetention)
	return v
}

// kvPositions maps offsets to writes and back.
type kvPositions struct {
	at    map[position]kvID
	where map[kvID]position
}

func (p *kvPositions) note(v *Verdict, at position, id kvID) {
	if had, ok := p.at[at]; ok && had != id {
		v.Counts["reused"]++
		v.fail(nil, "offset %s holds %s/%d and %s/%d", at, had.key, had.seq, id.key, id.seq)
	}
	p.at[at] = id
	if was, ok := p.where[id]; ok && was != at {
		v.Counts["duplicated"]++
		v.fail(nil, "%s/%d is at %s and at %s", id.key, id.seq, was, at)
	}
	p.where[id] = at
}

// checkScanShape checks one scan's records on their own: each names a
// write that may have taken effect, offsets and sequences increase.
func checkScanShape(v *Verdict, x *kvWrites, pos *kvPositions, op KVOp) {
	lastOff := map[int32]int64{}
	type keyAt struct {
		part   int32
		seq    int64 // the highest sequence read so far
		invoke int64 // when its write was invoked
	}
	lastKey := map[string]keyAt{}
	for _, r := range op.Records {
		at := position{r.Partition, r.Offset}
		if r.Bad != "" {
			v.fail(nil, "scan #%d: record at %s is none the workload writes: key %q, %q", op.ID, at, r.Key, r.Bad)
			continue
		}
		w, ok := x.byID[kvID{r.Key, r.Seq}]
		switch {
		case !ok:
			v.fail(nil, "scan #%d: %s/%d at %s was never written", op.ID, r.Key, r.Seq, at)
		case w.Outcome == OutcomeFail:
			v.fail(nil, "scan #%d: %s/%d at %s is a write that failed: %s", op.ID, r.Key, r.Seq, at, w)
		case (w.Kind == KVDelete) != r.Tombstone:
			v.fail(nil, "scan #%d: %s/%d at %s is read as tombstone=%v: %s", op.ID, r.Key, r.Seq, at, r.Tombstone, w)
		case w.Invoke > op.Complete:
			v.fail(nil, "scan #%d (ended %s) read %s/%d at %s, written later: %s", op.ID, time.Duration(op.Complete), r.Key, r.Seq, at, w)
		}
		if last, ok := lastOff[r.Partition]; ok && r.Offset <= last {
			v.fail(nil, "scan #%d: partition %d's offsets go from %d to %d", op.ID, r.Partition, last, r.Offset)
		}
		lastOff[r.Partition] = r.Offset
		// A key's records go back in sequence only if a write stored
		// before another was invoked after the other was acknowledged: a
		// write its producer gave up on (unknown) may still be appended
		// after the producer's later writes, as CheckKeyOrder allows.
		last, seen := lastKey[r.Key]
		switch {
		case seen && last.part != r.Partition:
			v.fail(nil, "scan #%d: key %s is in partitions %d and %d", op.ID, r.Key, last.part, r.Partition)
		case seen && r.Seq <= last.seq && ok && w.Outcome == OutcomeOK && w.Complete < last.invoke:
			v.Counts["key_order"]++
			v.fail(nil, "scan #%d: key %s goes back from seq %d to %d at %s", op.ID, r.Key, last.seq, r.Seq, at)
		}
		if !seen || r.Seq > last.seq {
			lastKey[r.Key] = keyAt{r.Partition, r.Seq, w.Invoke}
		}
		pos.note(v, at, kvID{r.Key, r.Seq})
	}
}

// lastByKey is each key's last record in a scan (its highest offset).
func lastByKey(op KVOp) map[string]KVRecord {
	m := map[string]KVRecord{}
	for _, r := range op.Records {
		if r.Bad == "" {
			m[r.Key] = r
		}
	}
	return m
}

// expired reports whether tombstone w may have expired by t.
func expired(w KVOp, t int64, retention time.Duration) bool {
	return time.Duration(t-w.Invoke) > retention-expirySlack
}

// checkFinalScans holds every key of the final scans to its newest
// acknowledged write (see CheckCompacted).
func checkFinalScans(v *Verdict, x *kvWrites, finals []KVOp, retention time.Duration) {
	if len(finals) == 0 {
		v.inconclusive("no final scan of the compacted topic")
		return
	}
	lasts := make([]map[string]KVRecord, len(finals))
	for i, f := range finals {
		lasts[i] = lastByKey(f)
	}
	sorted := sortedRecords(finals[0])
	v.Counts["final_records"] = len(sorted)
	v.Counts["gaps"] = gaps(sorted)
	for _, key := range slices.Sorted(maps.Keys(x.byKey)) {
		w, ok := x.newestAckedBefore(key, -1)
		if !ok {
			continue
		}
		resurrected := 0
		for i, f := range finals {
			l, held := lasts[i][key]
			switch {
			case held && l.Seq >= w.Seq:
			case w.Kind == KVPut && !held:
				v.Counts["lost"]++
				v.fail(nil, "final scan %d: key %s is gone; its newest acknowledged write: %s", f.Final, key, w)
			case !held && !expired(w, f.Complete, retention):
				v.Counts["early"]++
				v.fail(nil, "final scan %d: key %s is gone before its acknowledged tombstone's delete.retention (%s): %s", f.Final, key, retention, w)
			case w.Kind == KVPut || !expired(w, f.Complete, retention):
				v.Counts["stale"]++
				v.fail(nil, "final scan %d: key %s holds %s (seq %d), older than its acknowledged %s", f.Final, key, kvRecordString(l, held), l.Seq, w)
			case held:
				resurrected++
			}
		}
		if resurrected == len(finals) {
			v.Counts["resurrected"]++
			l := lasts[0][key]
			v.fail(nil, "key %s holds seq %d (at %d/%d) in every final scan, older than its acknowledged tombstone, which expired: %s",
				key, l.Seq, l.Partition, l.Offset, w)
		}
		if _, held := lasts[0][key]; w.Kind == KVDelete && !held {
			v.Counts["deleted"]++
		}
	}
	for _, ws := range x.acked {
		for _, w := range ws {
			if w.Offset >= 0 && !holds(sorted, w) {
				v.Counts["removed"]++
			}
		}
	}
}

func kvRecordString(r KVRecord, held bool) string {
	switch {
	case !held:
		return "nothing"
	case r.Tombstone:
		return fmt.Sprintf("a tombstone at %d/%d", r.Partition, r.Offset)
	}
	return fmt.Sprintf("a value at %d/%d", r.Partition, r.Offset)
}

// sortedRecords is a copy of a scan's records sorted by partition and
// offset.
func sortedRecords(f KVOp) []KVRecord {
	recs := slices.Clone(f.Records)
	slices.SortFunc(recs, func(a, b KVRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return recs
}

// holds reports whether sorted records hold write w at its offset.
func holds(sorted []KVRecord, w KVOp) bool {
	i, ok := slices.BinarySearchFunc(sorted, position{w.Partition, w.Offset}, func(r KVRecord, p position) int {
		return cmp.Or(cmp.Compare(r.Partition, p.partition), cmp.Compare(r.Offset, p.offset))
	})
	return ok && sorted[i].Key == w.Key && sorted[i].Seq == w.Seq
}

// gaps counts the offsets sorted records step over between the first and
// last record of each partition (what compaction removed).
func gaps(sorted []KVRecord) int {
	n := 0
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if a.Partition == b.Partition && b.Offset > a.Offset+1 {
			n += int(b.Offset - a.Offset - 1)
		}
	}
	return n
}

// checkScansNewest holds every scan during the run to the writes
// acknowledged before it began (see CheckCompacted).
func checkScansNewest(v *Verdict, x *kvWrites, scans []KVOp, retention time.Duration) {
	keys := slices.Sorted(maps.Keys(x.acked))
	for _, s := range scans {
		last := lastByKey(s)
		for _, key := range keys {
			w, ok := x.newestAckedBefore(key, s.Invoke)
			if !ok {
				continue
			}
			l, held := last[key]
			switch {
			case held && l.Seq >= w.Seq:
			case x.newerDuring(key, w.Seq, s.Invoke, s.Complete):
				v.Counts["raced"]++
			case w.Kind == KVDelete && expired(w, s.Complete, retention):
			default:
				v.Counts["stale_scan"]++
				v.fail(nil, "scan #%d %s: key %s holds %s (seq %d), older than %s, acknowledged before the scan began",
					s.ID, time.Duration(s.Invoke), key, kvRecordString(l, held), l.Seq, w)
			}
		}
	}
}

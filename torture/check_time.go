package torture

// CheckTimeIndex: a seek by time returns the first offset whose timestamp
// is >= the time asked, judged on the final read's records and timestamps
// (an offset never changes its record, so the final read shows what was
// there when the seek ran; every offset below the answer existed then):
//
//   - no record below the answer has a timestamp >= the time asked (the
//     seek skipped none);
//   - below the high watermark that came with the answer, the record at
//     the answer has a timestamp >= the time asked;
//   - the answer is not above that high watermark.
//
// Seeks whose answer lies below the final read's start (trimmed since) are
// not judged. Counts: seeks judged, wrong answers.
func CheckTimeIndex(ops []Op) *Verdict {
	v := newVerdict("time-index")
	v.Counts["seeks"] = 0
	v.Counts["wrong"] = 0
	type rec struct {
		ts int64
		ok bool
	}
	_, finalOps := finalReads(ops)
	ts := map[int32][]rec{}    // by offset, from the final read's start
	start := map[int32]int64{} // the final read's first offset
	maxTS := map[int32][]int64{}
	for p, reads := range finalOps {
		lo, hi := reads[0].From, reads[0].Next
		for _, r := range reads {
			lo, hi = min(lo, r.From), max(hi, r.Next)
		}
		start[p] = lo
		list := make([]rec, hi-lo)
		for _, r := range reads {
			for _, rr := range r.Records {
				list[rr.Offset-lo] = rec{rr.Timestamp, true}
			}
		}
		ts[p] = list
		// maxTS[p][i]: the largest timestamp among offsets lo..lo+i-1.
		m := make([]int64, len(list)+1)
		m[0] = -1 << 63
		for i, r := range list {
			m[i+1] = m[i]
			if r.ok {
				m[i+1] = max(m[i+1], r.ts)
			}
		}
		maxTS[p] = m
	}
	for _, op := range ops {
		if op.Kind != OpSeekTime || op.Outcome != OutcomeOK {
			continue
		}
		list, ok := ts[op.Partition]
		if !ok || op.Offset < start[op.Partition] {
			continue
		}
		lo := start[op.Partition]
		v.Counts["seeks"]++
		i := op.Offset - lo
		switch {
		case op.Offset > op.HighWatermark:
			v.Counts["wrong"]++
			v.fail([]Op{op}, "seek of %d to %d answered %d, above the high watermark %d", op.Partition, op.TimeMs, op.Offset, op.HighWatermark)
		case i > int64(len(list)):
			v.Counts["wrong"]++
			v.fail([]Op{op}, "seek of %d to %d answered %d, past the final read's end %d", op.Partition, op.TimeMs, op.Offset, lo+int64(len(list)))
		case maxTS[op.Partition][i] >= op.TimeMs:
			x := lo
			for ; x < op.Offset && (!list[x-lo].ok || list[x-lo].ts < op.TimeMs); x++ {
			}
			v.Counts["wrong"]++
			v.fail(append([]Op{op}, readCovering(finalOps[op.Partition], x)...),
				"seek of %d to %d answered %d, skipping offset %d whose timestamp %d is >= %d", op.Partition, op.TimeMs, op.Offset, x, list[x-lo].ts, op.TimeMs)
		case op.Offset < op.HighWatermark && i < int64(len(list)) && list[i].ok && list[i].ts < op.TimeMs:
			v.Counts["wrong"]++
			v.fail(append([]Op{op}, readCovering(finalOps[op.Partition], op.Offset)...),
				"seek of %d to %d answered %d, whose timestamp %d is earlier", op.Partition, op.TimeMs, op.Offset, list[i].ts)
		}
	}
	return v
}

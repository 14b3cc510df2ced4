package log

import "testing"

// TestEpochEnd checks EpochEnd against a linear scan of a log whose
// batches hold epochs 2, 2, 5, 5, 5, 9 (three entries a term: two batches
// of two records and a configuration entry, in every order), at every
// epoch asked, with the log start at every batch boundary and inside a
// batch.
func TestEpochEnd(t *testing.T) {
	l := mustOpen(t, newFaultFS(), Options{SegmentBytes: 300, IndexIntervalBytes: 64})
	defer l.Close()
	type run struct {
		term uint64
		n    int
	}
	idx := uint64(1)
	for _, r := range []run{{2, 5}, {5, 7}, {9, 4}, {12, 1}} { // the last: a configuration entry only
		if err := l.AppendEntries(frames(raftEntries(idx, r.n, r.term))); err != nil {
			t.Fatal(err)
		}
		idx += uint64(r.n)
	}
	hw := l.HighWatermark()
	// epochAt[o] is the epoch of the batch holding offset o.
	var epochAt []int32
	for o := int64(0); o < hw; o++ {
		info, err := l.batchAt(o)
		if err != nil {
			t.Fatal(err)
		}
		epochAt = append(epochAt, info.LeaderEpoch)
	}
	want := func(start int64, epoch int32) (int32, int64) {
		end := hw
		for o := start; o < hw; o++ {
			if epochAt[o] > epoch {
				end = o
				for end > 0 && epochAt[end-1] == epochAt[o] {
					end-- // the batch's base
				}
				end = max(end, start)
				break
			}
		}
		if end == start {
			return epoch, end
		}
		return epochAt[end-1], end
	}
	for start := int64(0); start <= hw; start++ {
		if _, err := l.AdvanceStart(start); err != nil {
			t.Fatal(err)
		}
		for epoch := int32(0); epoch <= 13; epoch++ {
			found, end, err := l.EpochEnd(epoch)
			wf, we := want(start, epoch)
			if err != nil || found != wf || end != we {
				t.Fatalf("start %d, epoch %d: (%d, %d), %v; want (%d, %d)", start, epoch, found, end, err, wf, we)
			}
		}
	}
}

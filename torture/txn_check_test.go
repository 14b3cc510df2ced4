package torture

import (
	"strings"
	"testing"
)

// tw is a record of a transaction written to p, acknowledged at off (off
// < 0: not acknowledged), sent at inv seconds.
func tw(p int32, value string, off, inv int64) TxnWrite {
	return TxnWrite{Partition: p, Value: value, Acked: off >= 0, Offset: off, Invoke: inv * sec, AckTime: (inv + 1) * sec}
}

func ttxn(id, tid string, inst int, commit bool, out Outcome, inv, end int64, offsets map[int32]int64, ws ...TxnWrite) TxnOp {
	return TxnOp{ID: id, TxnID: tid, Instance: inst, Commit: commit, Outcome: out, Offsets: offsets,
		Invoke: inv * sec, End: end * sec, Complete: (end + 1) * sec, Writes: ws}
}

func trec(off int64, value string) TxnRecord { return TxnRecord{Offset: off, Value: value} }

func tread(p int32, from, end, inv int64, final bool, recs ...TxnRecord) TxnRead {
	return TxnRead{Partition: p, From: from, End: end, Invoke: inv * sec, Complete: (inv + 1) * sec, Final: final, Records: recs}
}

// txnValidHistory: t1 commits records on p0 and p1 (offsets 0 and 0); t2
// aborts (offsets 1, and its abort marker at 2 on p0); t3's commit is
// unknown and it did commit (p0 offset 3, read); t4 crashed unfinished
// and its instance was fenced by instance 2, which committed t5. A read
// during the run saw t1 on p0 with the LSO at 1 and p1 not yet past t1.
func txnValidHistory() *TxnHistory {
	return &TxnHistory{
		Txns: []TxnOp{
			ttxn("t1", "a", 1, true, OutcomeOK, 1, 2, map[int32]int64{0: 1}, tw(0, "t1-0", 0, 1), tw(1, "t1-1", 0, 1)),
			ttxn("t2", "a", 1, false, OutcomeOK, 3, 4, map[int32]int64{0: 2}, tw(0, "t2-0", 1, 3)),
			ttxn("t3", "a", 1, true, OutcomeUnknown, 5, 6, map[int32]int64{0: 3}, tw(0, "t3-0", 3, 5), tw(1, "t3-1", -1, 5)),
			ttxn("t4", "a", 1, false, OutcomeUnknown, 7, 7, nil, tw(1, "t4-1", 3, 7)),
			ttxn("t5", "a", 2, true, OutcomeOK, 9, 10, map[int32]int64{0: 5}, tw(0, "t5-0", 5, 9)),
		},
		Fences: []TxnFence{{TxnID: "a", Instance: 2, Time: 8 * sec}},
		Reads: []TxnRead{
			tread(0, 0, 1, 2, false, trec(0, "t1-0")),
			tread(1, 0, 0, 2, false),
			tread(0, 0, 7, 20, true, trec(0, "t1-0"), trec(3, "t3-0"), trec(5, "t5-0")),
			tread(1, 0, 6, 20, true, trec(0, "t1-1"), trec(2, "t3-1")),
		},
		Offsets: []TxnOffsetRead{
			{TxnID: "a", Partition: 0, Offset: -1, Invoke: 0, Complete: sec},
			{TxnID: "a", Partition: 0, Offset: 1, Invoke: 5 * sec, Complete: 6 * sec},
			{TxnID: "a", Partition: 0, Offset: 5, Invoke: 20 * sec, Complete: 21 * sec},
		},
	}
}

func TestCheckTxnValid(t *testing.T) {
	v := CheckTxn(txnValidHistory())
	if !v.OK() {
		t.Fatalf("valid history judged %s", v)
	}
	if v.Counts["txn_visible"] != 3 || v.Counts["fences"] != 1 || v.Counts["final_partitions"] != 2 {
		t.Fatalf("counts %v", v.Counts)
	}
}

func TestCheckTxnInvalid(t *testing.T) {
	cases := []struct {
		name, want string
		edit       func(h *TxnHistory)
	}{
		{"aborted record read", "did not commit", func(h *TxnHistory) {
			h.Reads[2].Records = append(h.Reads[2].Records, trec(1, "t2-0"))
		}},
		{"unfinished record read", "did not commit", func(h *TxnHistory) {
			h.Reads[3].Records = append(h.Reads[3].Records, trec(3, "t4-1"))
		}},
		{"record of no transaction", "no transaction", func(h *TxnHistory) {
			h.Reads[2].Records = append(h.Reads[2].Records, trec(6, "x"))
		}},
		{"committed transaction seen partly", "seen partly", func(h *TxnHistory) {
			h.Reads[1].End = 1 // the LSO of p1 past t1-1, which the read lacks
		}},
		{"committed record missing from final read", "0 times", func(h *TxnHistory) {
			h.Reads[3].Records = h.Reads[3].Records[1:]
			h.Reads[3].From = 1
		}},
		{"record read twice", "2 times", func(h *TxnHistory) {
			h.Reads = append(h.Reads, tread(0, 5, 6, 21, true, trec(5, "t5-0")))
		}},
		{"aborted offset commit read", "did not commit", func(h *TxnHistory) {
			h.Offsets[1].Offset = 2
		}},
		{"offset commit lost", "read after transaction t5 committed", func(h *TxnHistory) {
			h.Offsets[2].Offset = 3
		}},
		{"fenced write acknowledged", "fenced it", func(h *TxnHistory) {
			h.Txns[3].Writes[0].Invoke = 8*sec + 1
		}},
		{"fenced commit acknowledged", "fenced it", func(h *TxnHistory) {
			h.Txns[3].Commit, h.Txns[3].Outcome, h.Txns[3].End = true, OutcomeOK, 9*sec
			h.Reads[3].Records = append(h.Reads[3].Records, trec(3, "t4-1"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := txnValidHistory()
			c.edit(h)
			v := CheckTxn(h)
			if v.OK() || !strings.Contains(strings.Join(v.Problems, "\n"), c.want) {
				t.Fatalf("want invalid with %q, got %s", c.want, v)
			}
		})
	}
}

package torture

import (
	"strings"
	"testing"
	"time"
)

const sec = int64(time.Second)

// kvRetention is the delete.retention of the hand-made histories.
const kvRetention = 5 * time.Second

// kvw is a write of key at seq, at partition 0 and offset off (when
// acknowledged), begun at inv and completed at inv+1 (seconds).
func kvw(kind KVOpKind, key string, seq int64, out Outcome, off, inv int64) KVOp {
	return KVOp{Kind: kind, Key: key, Seq: seq, Outcome: out, Offset: off, Invoke: inv * sec, Complete: (inv + 1) * sec}
}

func kvr(off int64, key string, seq int64) KVRecord {
	return KVRecord{Offset: off, Key: key, Seq: seq}
}

func kvt(off int64, key string, seq int64) KVRecord {
	return KVRecord{Offset: off, Key: key, Seq: seq, Tombstone: true}
}

func kvScan(final int, inv, comp int64, recs ...KVRecord) KVOp {
	return KVOp{Kind: KVScan, Outcome: OutcomeOK, Final: final, Invoke: inv * sec, Complete: comp * sec, Records: recs}
}

// kvValidHistory: key a is written three times (the last put unknown, and
// stored), key b put then deleted (the tombstone expired and is gone, with
// b's value), key c put and deleted with the tombstone still there; a
// scan during the run; the final scans step over compacted offsets.
func kvValidHistory() []KVOp {
	return []KVOp{
		kvw(KVPut, "a", 1, OutcomeOK, 0, 1),
		kvw(KVPut, "b", 1, OutcomeOK, 1, 1),
		kvw(KVPut, "a", 2, OutcomeOK, 2, 2),
		kvScan(0, 4, 5, kvr(0, "a", 1), kvr(1, "b", 1), kvr(2, "a", 2)),
		kvw(KVDelete, "b", 2, OutcomeOK, 3, 5),
		kvw(KVPut, "c", 1, OutcomeOK, 4, 6),
		kvw(KVPut, "a", 3, OutcomeUnknown, 0, 7),
		kvw(KVPut, "a", 4, OutcomeFail, 0, 8),
		kvw(KVDelete, "c", 2, OutcomeOK, 6, 28),
		// Offset 0 kept (a batch with a record to keep), 1-3 compacted.
		kvScan(1, 30, 31, kvr(0, "a", 1), kvr(4, "c", 1), kvr(5, "a", 3), kvt(6, "c", 2)),
		kvScan(2, 31, 32, kvr(0, "a", 1), kvr(4, "c", 1), kvr(5, "a", 3), kvt(6, "c", 2)),
	}
}

func TestCheckCompactedValid(t *testing.T) {
	v := CheckCompacted(kvValidHistory(), kvRetention)
	if !v.OK() {
		t.Fatalf("valid history judged %s", v)
	}
	want := map[string]int{"put_ok": 4, "put_unknown": 1, "put_fail": 1, "delete_ok": 2, "scans": 1, "keys": 3,
		"deleted": 1, "gaps": 3, "final_records": 4, "removed": 3}
	for k, n := range want {
		if v.Counts[k] != n {
			t.Errorf("count %s = %d, want %d (%s)", k, v.Counts[k], n, v)
		}
	}
}

// TestCheckCompactedInvalid changes the valid history in one way each.
func TestCheckCompactedInvalid(t *testing.T) {
	finals := func(ops []KVOp, f func(*KVOp)) []KVOp {
		for i := range ops {
			if ops[i].Final > 0 {
				f(&ops[i])
			}
		}
		return ops
	}
	cases := []struct {
		name, want string
		edit       func([]KVOp) []KVOp
	}{
		{"newest put lost", "key a is gone", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = []KVRecord{kvr(4, "c", 1), kvt(6, "c", 2)} })
		}},
		{"older value than the newest acknowledged", "key a holds a value at 0/0 (seq 1), older than", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = []KVRecord{kvr(0, "a", 1), kvr(4, "c", 1), kvt(6, "c", 2)} })
		}},
		{"value back after its tombstone expired", "key b holds seq 1 (at 0/1) in every final scan", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append([]KVRecord{kvr(0, "a", 1), kvr(1, "b", 1)}, op.Records[1:]...) })
		}},
		{"tombstone removed before its retention", "key c is gone before", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = []KVRecord{kvr(0, "a", 1), kvr(5, "a", 3)} })
		}},
		{"value older than a live tombstone", "key c holds a value at 0/4 (seq 1), older than", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = op.Records[:3] })
		}},
		{"a failed write read", "is a write that failed", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append(op.Records, kvr(7, "a", 4)) })
		}},
		{"a write never made read", "a/9 at 0/7 was never written", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append(op.Records, kvr(7, "a", 9)) })
		}},
		{"a record the workload does not write", "is none the workload writes", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append(op.Records, KVRecord{Offset: 7, Key: "x", Bad: "junk"}) })
		}},
		{"a put read as a tombstone", "is read as tombstone=true", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records[2].Tombstone = true })
		}},
		{"offsets go back in a scan", "partition 0's offsets go from 6 to 5", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append(op.Records, kvr(5, "a", 3)) })
		}},
		{"a key goes back in sequence", "key a goes back from seq 3 to 2", func(ops []KVOp) []KVOp {
			return finals(ops, func(op *KVOp) { op.Records = append(op.Records, kvr(8, "a", 2)) })
		}},
		{"an offset reused", "offset 0/2 holds a/2 and c/1", func(ops []KVOp) []KVOp {
			ops[3].Records[2] = kvr(2, "c", 1)
			return ops
		}},
		{"a write at two offsets", "a/2 is at 0/2 and at 0/9", func(ops []KVOp) []KVOp {
			return append(ops, kvScan(0, 40, 41, kvr(9, "a", 2)))
		}},
		{"a scan misses what was acknowledged before it", "scan #11 7s: key b holds a value at 0/1 (seq 1), older than", func(ops []KVOp) []KVOp {
			return append(ops, kvScan(0, 7, 8, kvr(1, "b", 1)))
		}},
		{"a scan reads a write begun after it ended", "written later", func(ops []KVOp) []KVOp {
			ops[3].Records = append(ops[3].Records, kvr(4, "c", 1))
			return ops
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := tc.edit(kvValidHistory())
			for i := range ops {
				ops[i].ID = i
			}
			v := CheckCompacted(ops, kvRetention)
			if v.Result != Invalid {
				t.Fatalf("judged %s", v)
			}
			if !strings.Contains(v.String(), tc.want) {
				t.Fatalf("verdict does not say %q:\n%s", tc.want, v)
			}
		})
	}
}

// TestCheckCompactedExcused: what compaction may show a reader is not a
// violation.
func TestCheckCompactedExcused(t *testing.T) {
	cases := []struct {
		name string
		edit func([]KVOp) []KVOp
	}{
		// One final scan overtaken by a clean: it read b's value, then
		// the clean removed both it and its expired tombstone.
		{"a value before an expired tombstone in one final scan", func(ops []KVOp) []KVOp {
			ops[9].Records = append([]KVRecord{kvr(0, "a", 1), kvr(1, "b", 1)}, ops[9].Records[1:]...)
			return ops
		}},
		// A scan during the run misses a's newest acknowledged value,
		// compacted away because of a newer write past the scan's end.
		{"a scan racing a newer write", func(ops []KVOp) []KVOp {
			return append(ops, kvScan(0, 7, 8, kvr(0, "a", 1), kvt(3, "b", 2)))
		}},
		// Two writes outstanding at once, both given up on (unknown),
		// stored in the other order.
		{"two unknown writes stored out of order", func(ops []KVOp) []KVOp {
			ops = append(ops, kvw(KVPut, "d", 1, OutcomeUnknown, 0, 9), kvw(KVPut, "d", 2, OutcomeUnknown, 0, 9))
			return append(ops, kvScan(0, 12, 13, kvr(2, "a", 2), kvr(4, "c", 1), kvr(7, "d", 2), kvr(8, "d", 1)))
		}},
		// A scan during the run misses b's tombstone, which expired.
		{"a scan after a tombstone expired", func(ops []KVOp) []KVOp {
			return append(ops, kvScan(0, 12, 13, kvr(2, "a", 2), kvr(4, "c", 1)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := tc.edit(kvValidHistory())
			for i := range ops {
				ops[i].ID = i
			}
			if v := CheckCompacted(ops, kvRetention); !v.OK() {
				t.Fatalf("judged %s", v)
			}
		})
	}
}

func TestCheckCompactedNoFinalScan(t *testing.T) {
	ops := kvValidHistory()[:9]
	if v := CheckCompacted(ops, kvRetention); v.Result != Inconclusive {
		t.Fatalf("without a final scan: %s", v)
	}
}

package torture

import (
	"slices"
	"strings"
	"testing"
)

// shareOK is a clean history: two records on partition 0, the first
// released once then accepted, the second rejected; a third on partition
// 1 delivered up to the limit and archived; the drain left nothing.
func shareOK() *ShareHistory {
	return &ShareHistory{
		Limit: 3,
		Produces: []ShareProduce{
			{Value: "a", Partition: 0, Offset: 0, Outcome: OutcomeOK},
			{Value: "b", Partition: 0, Offset: 1, Outcome: OutcomeOK},
			{Value: "c", Partition: 1, Offset: 0, Outcome: OutcomeOK},
			{Value: "d", Outcome: OutcomeUnknown},
		},
		Deliveries: []ShareDelivery{
			{Member: "m1", Partition: 0, Offset: 0, Value: "a", Count: 1, Invoke: 10, Time: 11},
			{Member: "m1", Partition: 0, Offset: 1, Value: "b", Count: 1, Invoke: 10, Time: 11},
			{Member: "m2", Partition: 0, Offset: 0, Value: "a", Count: 2, Invoke: 20, Time: 21},
			{Member: "m1", Partition: 1, Offset: 0, Value: "c", Count: 1, Invoke: 10, Time: 11},
			{Member: "m2", Partition: 1, Offset: 0, Value: "c", Count: 2, Invoke: 30, Time: 31},
			{Member: "m1", Partition: 1, Offset: 0, Value: "c", Count: 3, Invoke: 40, Time: 41},
		},
		Acks: []ShareAck{
			{Member: "m1", Partition: 0, Outcome: OutcomeOK, Invoke: 12, Complete: 13, Entries: []ShareAckEntry{
				{Offset: 0, Count: 1, Type: ShareRelease}, {Offset: 1, Count: 1, Type: ShareReject}}},
			{Member: "m2", Partition: 0, Outcome: OutcomeOK, Invoke: 22, Complete: 23, Entries: []ShareAckEntry{
				{Offset: 0, Count: 2, Type: ShareAccept}}},
			{Member: "m1", Partition: 1, Outcome: OutcomeOK, Invoke: 42, Complete: 43, Entries: []ShareAckEntry{
				{Offset: 0, Count: 3, Type: ShareRelease}}},
		},
		Final: []ShareFinal{{Partition: 0, Start: 2, End: 2}, {Partition: 1, Start: -1, End: 1}},
	}
}

func TestCheckShareValid(t *testing.T) {
	v := CheckShare(shareOK())
	if !v.OK() {
		t.Fatalf("a clean history judged %s: %v", v.Result, v.Problems)
	}
	if v.Counts["archived_at_limit"] != 1 || v.Counts["ack_accept_ok"] != 1 || v.Counts["redeliveries"] != 3 {
		t.Errorf("counts %v", v.Counts)
	}
}

// Each case breaks the clean history in one way; the checker must name it.
func TestCheckShareViolations(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(h *ShareHistory)
	}{
		{"past the limit", "past the limit", func(h *ShareHistory) {
			h.Deliveries = append(h.Deliveries, ShareDelivery{Member: "m2", Partition: 1, Offset: 0, Value: "c", Count: 4, Invoke: 50, Time: 51})
		}},
		{"count twice", "delivered twice with delivery count 1", func(h *ShareHistory) {
			h.Deliveries = append(h.Deliveries, ShareDelivery{Member: "m2", Partition: 0, Offset: 1, Value: "b", Count: 1, Invoke: 10, Time: 11})
		}},
		{"after accept", "after m2 accepted it", func(h *ShareHistory) {
			h.Deliveries = append(h.Deliveries, ShareDelivery{Member: "m3", Partition: 0, Offset: 0, Value: "a", Count: 3, Invoke: 30, Time: 31})
		}},
		{"after reject", "after m1 rejected it", func(h *ShareHistory) {
			h.Deliveries = append(h.Deliveries, ShareDelivery{Member: "m3", Partition: 0, Offset: 1, Value: "b", Count: 2, Invoke: 30, Time: 31})
		}},
		{"accepted twice", "acknowledged twice", func(h *ShareHistory) {
			h.Acks = append(h.Acks, ShareAck{Member: "m1", Partition: 0, Outcome: OutcomeOK, Invoke: 24, Complete: 25,
				Entries: []ShareAckEntry{{Offset: 0, Count: 1, Type: ShareAccept}}})
		}},
		{"accepted and rejected", "acknowledged twice", func(h *ShareHistory) {
			h.Acks = append(h.Acks, ShareAck{Member: "m1", Partition: 0, Outcome: OutcomeOK, Invoke: 14, Complete: 15,
				Entries: []ShareAckEntry{{Offset: 1, Count: 1, Type: ShareAccept}}})
		}},
		{"wrong value", "acknowledged with", func(h *ShareHistory) { h.Deliveries[0].Value = "x" }},
		{"unknown value", "no producer wrote", func(h *ShareHistory) {
			h.Produces[2].Outcome = OutcomeUnknown
			h.Deliveries[3].Value = "zz"
		}},
		{"lost", "0/0 (\"a\") lost", func(h *ShareHistory) {
			h.Acks = slices.Delete(h.Acks, 1, 2)
			h.Deliveries = slices.Delete(h.Deliveries, 2, 3)
		}},
		{"never delivered", "lost", func(h *ShareHistory) {
			h.Produces = append(h.Produces, ShareProduce{Value: "e", Partition: 1, Offset: 1, Outcome: OutcomeOK})
			h.Final[1].End = 2
		}},
		{"stuck", "below its end", func(h *ShareHistory) { h.Final[0].Start = 1 }},
		{"offset twice", "acknowledged for", func(h *ShareHistory) { h.Produces[1].Offset = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := shareOK()
			tc.edit(h)
			v := CheckShare(h)
			if v.Result != Invalid {
				t.Fatalf("judged %s, want invalid; problems %v", v.Result, v.Problems)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Errorf("problems %q do not say %q", v.Problems, tc.want)
			}
		})
	}
}

// Without the drain's final state the checker cannot say nothing was lost.
func TestCheckShareNoFinal(t *testing.T) {
	h := shareOK()
	h.Final = nil
	if v := CheckShare(h); v.Result != Inconclusive {
		t.Fatalf("judged %s without a final state, want inconclusive", v.Result)
	}
}

// An accept the broker did not answer applied may still have been: one
// of unknown outcome, or refused (a resent copy of an applied one is
// refused), accounts for its record; one never sent does not (the
// "lost" case above).
func TestCheckShareUnansweredAck(t *testing.T) {
	for _, o := range []Outcome{OutcomeUnknown, OutcomeFail} {
		h := shareOK()
		h.Acks[1].Outcome = o
		if v := CheckShare(h); !v.OK() {
			t.Errorf("accept %s: judged %s: %v", o, v.Result, v.Problems)
		}
	}
}

// The drain waits while a record is unsettled: neither accepted nor
// rejected and seen at fewer than limit-1 deliveries.
func TestShareUnsettled(t *testing.T) {
	h := shareOK()
	if n := shareUnsettled(h); n != 0 {
		t.Errorf("clean history: %d unsettled, want 0", n)
	}
	h.Produces = append(h.Produces, ShareProduce{Value: "e", Partition: 1, Offset: 1, Outcome: OutcomeOK})
	if n := shareUnsettled(h); n != 1 {
		t.Errorf("a record never delivered: %d unsettled, want 1", n)
	}
}

// shareOrdered is a clean ordered history with 2 keys (s0, s2: key k0;
// s1: key k1) on one partition: s0 released and handed out again before
// s2, s1 meanwhile.
func shareOrdered() *ShareHistory {
	return &ShareHistory{
		Limit: 3,
		Keys:  2,
		Produces: []ShareProduce{
			{Value: "s0", Partition: 0, Offset: 0, Outcome: OutcomeOK},
			{Value: "s1", Partition: 0, Offset: 1, Outcome: OutcomeOK},
			{Value: "s2", Partition: 0, Offset: 2, Outcome: OutcomeOK},
		},
		Deliveries: []ShareDelivery{
			{Member: "m1", Partition: 0, Offset: 0, Value: "s0", Count: 1, Invoke: 10, Time: 11},
			{Member: "m2", Partition: 0, Offset: 1, Value: "s1", Count: 1, Invoke: 10, Time: 12},
			{Member: "m2", Partition: 0, Offset: 0, Value: "s0", Count: 2, Invoke: 20, Time: 21},
			{Member: "m1", Partition: 0, Offset: 2, Value: "s2", Count: 1, Invoke: 30, Time: 31},
		},
		Acks: []ShareAck{
			{Member: "m1", Partition: 0, Outcome: OutcomeOK, Invoke: 12, Complete: 13, Entries: []ShareAckEntry{{Offset: 0, Count: 1, Type: ShareRelease}}},
			{Member: "m2", Partition: 0, Outcome: OutcomeOK, Invoke: 22, Complete: 23, Entries: []ShareAckEntry{
				{Offset: 0, Count: 2, Type: ShareAccept}, {Offset: 1, Count: 1, Type: ShareAccept}}},
			{Member: "m1", Partition: 0, Outcome: OutcomeOK, Invoke: 32, Complete: 33, Entries: []ShareAckEntry{{Offset: 2, Count: 1, Type: ShareAccept}}},
		},
		Final: []ShareFinal{{Partition: 0, Start: 3, End: 3}},
	}
}

// Per-key ordering: a clean history is valid; a later record of a key
// handed out before an earlier one's redelivery is named; overlapping
// polls prove nothing; without Keys the order is not judged.
func TestCheckShareOrder(t *testing.T) {
	if v := CheckShare(shareOrdered()); !v.OK() || v.Counts["order_checked"] == 0 {
		t.Fatalf("a clean ordered history judged %s (%v): %v", v.Result, v.Counts, v.Problems)
	}
	h := shareOrdered()
	h.Deliveries[3].Invoke, h.Deliveries[3].Time = 14, 15 // s2 out before s0's redelivery began at 20
	v := CheckShare(h)
	if v.Result != Invalid || !strings.Contains(strings.Join(v.Problems, "\n"), "key k0: offset 2 handed out to m1") {
		t.Fatalf("s2 before s0's redelivery judged %s: %v", v.Result, v.Problems)
	}
	h = shareOrdered()
	h.Deliveries[3].Invoke, h.Deliveries[3].Time = 19, 22 // overlaps s0's redelivery poll
	if v := CheckShare(h); !v.OK() {
		t.Fatalf("overlapping polls judged %s: %v", v.Result, v.Problems)
	}
	h = shareOrdered()
	h.Keys = 0
	h.Deliveries[3].Invoke, h.Deliveries[3].Time = 14, 15
	if v := CheckShare(h); !v.OK() {
		t.Fatalf("an unordered history judged by order: %v", v.Problems)
	}
}

// shareWithDeadLetters is shareOK with the dead-letter topic read after
// the drain: the rejected 0/1 and 1/0, out of deliveries, are there.
func shareWithDeadLetters() *ShareHistory {
	h := shareOK()
	h.DeadLettersRead = true
	h.DeadLetters = []ShareDeadLetter{
		{Partition: 0, Offset: 1, Value: "b", Count: 1},
		{Partition: 1, Offset: 0, Value: "c", Count: 3},
	}
	return h
}

// With the dead-letter topic read, every record is accepted or
// dead-lettered once: a record delivered once and then twice unseen
// (responses lost with a node) is accounted for by its dead letter; one
// in neither place is lost; accepted and dead-lettered, or dead-lettered
// twice, is a violation.
func TestCheckShareDeadLetters(t *testing.T) {
	if v := CheckShare(shareWithDeadLetters()); !v.OK() || v.Counts["dead_lettered"] != 2 {
		t.Fatalf("a clean history judged %s (%v): %v", v.Result, v.Counts, v.Problems)
	}
	h := shareWithDeadLetters()
	h.Produces = append(h.Produces, ShareProduce{Value: "e", Partition: 1, Offset: 1, Outcome: OutcomeOK})
	h.Deliveries = append(h.Deliveries, ShareDelivery{Member: "m3", Partition: 1, Offset: 1, Value: "e", Count: 1, Invoke: 50, Time: 51})
	h.DeadLetters = append(h.DeadLetters, ShareDeadLetter{Partition: 1, Offset: 1, Value: "e", Count: 3})
	h.Final[1].End = 2
	if v := CheckShare(h); !v.OK() || v.Counts["dead_lettered_after_unseen_deliveries"] != 1 {
		t.Fatalf("a record dead-lettered after unseen deliveries judged %s (%v): %v", v.Result, v.Counts, v.Problems)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(h *ShareHistory)
	}{
		{"lost", `1/0 ("c") lost: neither accepted nor in the dead-letter topic`, func(h *ShareHistory) { h.DeadLetters = h.DeadLetters[:1] }},
		{"accepted and dead-lettered", "both accepted", func(h *ShareHistory) {
			h.DeadLetters = append(h.DeadLetters, ShareDeadLetter{Partition: 0, Offset: 0, Value: "a", Count: 2})
		}},
		{"twice", "dead-lettered 2 times", func(h *ShareHistory) { h.DeadLetters = append(h.DeadLetters, h.DeadLetters[0]) }},
		{"wrong value", "dead-lettered with value", func(h *ShareHistory) { h.DeadLetters[0].Value = "x" }},
		{"count past the limit", "delivery count 4", func(h *ShareHistory) { h.DeadLetters[1].Count = 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := shareWithDeadLetters()
			tc.edit(h)
			v := CheckShare(h)
			if v.Result != Invalid || !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Fatalf("judged %s, want invalid saying %q; problems %v", v.Result, tc.want, v.Problems)
			}
		})
	}
}

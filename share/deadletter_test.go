package share

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func dlCfg(limit int16) Config {
	return Config{LockDurationMs: 1000, DeliveryLimit: limit, MaxInFlight: 100, DeadLetter: true}
}

// fakeDLQ is a dead-letter partition with the idempotence of a
// partition's producer state: a batch at or below the writer's last
// sequence is a duplicate, one past the next is refused.
type fakeDLQ struct {
	last    int32
	offsets []int64 // the source offsets stored, in order
}

func (f *fakeDLQ) append(d DeadLetter) error {
	switch {
	case d.Sequence <= f.last:
		return nil // a retry: stored once
	case d.Sequence != f.last+1:
		return errors.New("out of order sequence")
	}
	f.last = d.Sequence
	f.offsets = append(f.offsets, d.Offset)
	return nil
}

// deliver drains p's dead letters into f as the broker does: append in
// sequence order, then DeadLettered.
func deliver(t *testing.T, p *Partition, f *fakeDLQ) {
	t.Helper()
	for _, d := range p.DeadLetters() {
		if err := f.append(d); err != nil {
			t.Fatal(err)
		}
		if err := p.DeadLettered(d.Offset); err != nil {
			t.Fatal(err)
		}
	}
}

// A rejected record and one released at the limit become DeadLettering
// with consecutive sequences (the reason kept), are never acquired
// again, hold the window's start until dead-lettered, and are archived by
// DeadLettered only.
func TestDeadLetterRejectAndLimit(t *testing.T) {
	p := New(0, dlCfg(2))
	p.Acquire("a", 0, 3, 3, nil)
	if _, err := p.AcknowledgeWithReasons("a", 1, []Ack{{0, 0, []AckType{Reject}}, {1, 2, []AckType{Release}}}, map[int64]string{0: "bad payload"}); err != nil {
		t.Fatal(err)
	}
	p.Acquire("a", 2, 3, 3, nil)                                                        // 1 and 2, second delivery
	p.Acknowledge("a", 3, []Ack{{1, 1, []AckType{Release}}, {2, 2, []AckType{Accept}}}) // 1 at the limit
	want := []DeadLetter{{Offset: 0, DeliveryCount: 1, Sequence: 0, Reason: "bad payload"}, {Offset: 1, DeliveryCount: 2, Sequence: 1}}
	if got := p.DeadLetters(); !reflect.DeepEqual(got, want) {
		t.Fatalf("dead letters %+v, want %+v", got, want)
	}
	if got := p.Acquire("b", 4, 10, 3, nil); len(got) != 0 {
		t.Fatalf("acquired %v: a dead-lettering record was handed out", got)
	}
	if p.Start() != 0 {
		t.Fatalf("start %d moved past records not yet dead-lettered", p.Start())
	}
	if err := p.DeadLettered(2); !errors.Is(err, ErrNotDeadLettering) {
		t.Fatalf("DeadLettered of an accepted record: %v", err)
	}
	f := &fakeDLQ{last: -1}
	deliver(t, p, f)
	if p.Start() != 3 || len(p.DeadLetters()) != 0 || !reflect.DeepEqual(f.offsets, []int64{0, 1}) {
		t.Fatalf("after the appends: start %d, pending %v, stored %v", p.Start(), p.DeadLetters(), f.offsets)
	}
	// Off, a reject archives at once (the behaviour without a dead-letter topic).
	q := New(0, cfg(5, 100))
	q.Acquire("a", 0, 1, 1, nil)
	q.Acknowledge("a", 0, []Ack{{0, 0, []AckType{Reject}}})
	if q.Start() != 1 || len(q.DeadLetters()) != 0 {
		t.Fatalf("without dead letters: start %d, pending %v", q.Start(), q.DeadLetters())
	}
}

// A leader that appended a dead letter and failed before storing that it
// did (a crash, a failover) leaves the records DeadLettering in the
// stored state, with their sequences: the next leader appends them again
// with the same sequences, and the dead-letter partition stores each
// once. A record whose lock was lost at the limit gets its sequence from
// Decode, the same on every node that loads the state.
func TestDeadLetterRetryAfterFailoverStoredOnce(t *testing.T) {
	p := New(0, dlCfg(1))
	p.Acquire("a", 0, 4, 4, nil)
	p.Acknowledge("a", 1, []Ack{{0, 1, []AckType{Reject}}})
	stored := p.Encode() // written before any append
	if stored[0] != encVersionDL {
		t.Fatalf("encoding version %d with dead letters", stored[0])
	}
	f := &fakeDLQ{last: -1}
	first := p.DeadLetters()
	if err := f.append(first[0]); err != nil { // appended, then the leader died
		t.Fatal(err)
	}
	for _, node := range []string{"new leader", "another replica"} {
		q, err := Decode(stored, dlCfg(1))
		if err != nil {
			t.Fatal(err)
		}
		// 0 and 1 as stored; 2 and 3 were acquired at the limit: Decode
		// makes them dead-lettering with the next sequences, in order.
		want := []DeadLetter{{0, 1, 0, ""}, {1, 1, 1, ""}, {2, 1, 2, ""}, {3, 1, 3, ""}}
		if got := q.DeadLetters(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: dead letters %+v, want %+v", node, got, want)
		}
	}
	q, _ := Decode(stored, dlCfg(1))
	deliver(t, q, f)
	if !reflect.DeepEqual(f.offsets, []int64{0, 1, 2, 3}) || q.Start() != 4 {
		t.Fatalf("stored %v (want each once), start %d", f.offsets, q.Start())
	}
	// The sequence goes on after a round trip.
	r, err := Decode(q.Encode(), dlCfg(1))
	if err != nil {
		t.Fatal(err)
	}
	r.Acquire("a", 5, 1, 5, nil)
	r.Acknowledge("a", 5, []Ack{{4, 4, []AckType{Reject}}})
	if got := r.DeadLetters(); len(got) != 1 || got[0].Sequence != 4 {
		t.Fatalf("after a round trip: %+v, want sequence 4", got)
	}
}

// A state that never dead-lettered encodes as version 1, readable by a
// node that knows nothing of dead letters; corrupt version 2 bytes are
// refused.
func TestDeadLetterEncoding(t *testing.T) {
	p := New(3, dlCfg(5))
	p.Acquire("a", 0, 2, 5, nil)
	if b := p.Encode(); b[0] != encVersion {
		t.Fatalf("version %d without dead letters", b[0])
	}
	p.Acknowledge("a", 0, []Ack{{3, 3, []AckType{Reject}}})
	b := p.Encode()
	q, err := Decode(b, dlCfg(5))
	if err != nil || !reflect.DeepEqual(q.Encode(), b) {
		t.Fatalf("round trip: %v %v", q, err)
	}
	for i := 1; i < len(b); i++ {
		if _, err := Decode(b[:i], dlCfg(5)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
	}
	bad := append([]byte(nil), b...)
	bad[3] = 0 // the next sequence below the stored record's
	if _, err := Decode(bad, dlCfg(5)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a sequence past the next: %v", err)
	}
}

// The reason a member gave for a record it rejected is stored with the
// record until its dead-letter append (version 3), so the leader that
// appends it after a failover carries it too; once appended, the state
// encodes as version 2 again. Corrupt reasons are refused.
func TestDeadLetterReasonStored(t *testing.T) {
	p := New(0, dlCfg(5))
	p.Acquire("a", 0, 3, 3, nil)
	if _, err := p.AcknowledgeWithReasons("a", 1, []Ack{{0, 2, []AckType{Reject}}}, map[int64]string{0: "bad payload", 2: "no schema"}); err != nil {
		t.Fatal(err)
	}
	b := p.Encode()
	if b[0] != encVersionReasons {
		t.Fatalf("version %d with reasons", b[0])
	}
	q, err := Decode(b, dlCfg(5))
	if err != nil {
		t.Fatal(err)
	}
	want := []DeadLetter{{0, 1, 0, "bad payload"}, {1, 1, 1, ""}, {2, 1, 2, "no schema"}}
	if got := q.DeadLetters(); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded dead letters %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(q.Encode(), b) {
		t.Fatal("re-encoding differs")
	}
	for i := 1; i < len(b); i++ {
		if _, err := Decode(b[:i], dlCfg(5)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
	}
	// The reasons section: count, index 0, length 11, ... ; index 2, length 9, ...
	at := len(b) - (1 + 1 + 1 + 11 + 1 + 1 + 9)
	for name, edit := range map[string]func(c []byte){
		"an index out of order": func(c []byte) { c[at+1+1+1+11] = 0 },
		"a record not dead-lettering": func(c []byte) {
			c[at+1] = 5 // past the window
		},
		"an empty reason": func(c []byte) { c[at+2] = 0 },
	} {
		c := append([]byte(nil), b...)
		edit(c)
		if _, err := Decode(c, dlCfg(5)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, d := range q.DeadLetters() {
		if err := q.DeadLettered(d.Offset); err != nil {
			t.Fatal(err)
		}
	}
	if b := q.Encode(); b[0] != encVersionDL {
		t.Fatalf("version %d once every dead letter is appended", b[0])
	}
}

// The reasons one state stores add up to MaxStoredReasonBytes at most, in
// offset order; the others stay in memory.
func TestDeadLetterReasonsBounded(t *testing.T) {
	p := New(0, dlCfg(5))
	n := MaxStoredReasonBytes/1000 + 5
	p.Acquire("a", 0, n, int64(n), nil)
	reasons := map[int64]string{}
	for o := range int64(n) {
		reasons[o] = strings.Repeat("x", 1000)
	}
	if _, err := p.AcknowledgeWithReasons("a", 1, []Ack{{0, int64(n - 1), []AckType{Reject}}}, reasons); err != nil {
		t.Fatal(err)
	}
	q, err := Decode(p.Encode(), dlCfg(5))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for i, d := range q.DeadLetters() {
		if d.Reason != "" {
			kept++
			if i >= MaxStoredReasonBytes/1000 {
				t.Fatalf("offset %d's reason stored past the bound", d.Offset)
			}
		}
	}
	if kept != MaxStoredReasonBytes/1000 {
		t.Fatalf("%d reasons stored, want %d", kept, MaxStoredReasonBytes/1000)
	}
	if got := p.DeadLetters(); got[n-1].Reason == "" {
		t.Fatal("the reason past the bound is gone from memory too")
	}
}

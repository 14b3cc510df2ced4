package share

import (
	"errors"
	"reflect"
	"testing"
)

func cfg(limit int16, window int64) Config {
	return Config{LockDurationMs: 1000, DeliveryLimit: limit, MaxInFlight: window}
}

func TestAcquireLowestFirstWithCounts(t *testing.T) {
	p := New(10, cfg(5, 100))
	got := p.Acquire("a", 0, 3, 20, nil)
	want := []Range{{10, 12, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("acquire: %v, want %v", got, want)
	}
	got = p.Acquire("b", 0, 100, 15, nil)
	if want := []Range{{13, 14, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second acquire: %v, want %v", got, want)
	}
	if p.End() != 15 || p.Start() != 10 {
		t.Fatalf("window %d..%d, want 10..15", p.Start(), p.End())
	}
	// b releases 13: it comes back with count 2 before any new offset.
	if _, err := p.Acknowledge("b", 1, []Ack{{13, 13, []AckType{Release}}}); err != nil {
		t.Fatal(err)
	}
	got = p.Acquire("a", 2, 2, 20, nil)
	if want := []Range{{13, 13, 2}, {15, 15, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivery: %v, want %v", got, want)
	}
}

func TestAcceptMovesStart(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 5, 5, nil)
	if _, err := p.Acknowledge("a", 1, []Ack{{1, 2, []AckType{Accept}}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 0 {
		t.Fatalf("start moved past an unacknowledged 0: %d", p.Start())
	}
	if _, err := p.Acknowledge("a", 1, []Ack{{0, 0, []AckType{Reject}}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 3 {
		t.Fatalf("start %d, want 3", p.Start())
	}
	if s, _ := p.Record(0); s != Acknowledged {
		t.Fatalf("offset below start is %v", s)
	}
}

func TestAcknowledgeChecksBeforeApplying(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 3, 3, nil)
	p.Acquire("b", 0, 3, 6, nil)
	cases := []struct {
		name string
		acks []Ack
		want error
	}{
		{"other member's record", []Ack{{0, 0, []AckType{Accept}}, {3, 3, []AckType{Accept}}}, ErrInvalidRecordState},
		{"past end", []Ack{{0, 9, []AckType{Accept}}}, ErrInvalidRecordState},
		{"first after last", []Ack{{2, 1, []AckType{Accept}}}, ErrInvalidAck},
		{"overlap", []Ack{{0, 1, []AckType{Accept}}, {1, 2, []AckType{Accept}}}, ErrInvalidAck},
		{"types length", []Ack{{0, 2, []AckType{Accept, Accept}}}, ErrInvalidAck},
		{"unknown type", []Ack{{0, 0, []AckType{7}}}, ErrInvalidAck},
		{"no types", []Ack{{0, 0, nil}}, ErrInvalidAck},
	}
	before := p.Encode()
	for _, c := range cases {
		if _, err := p.Acknowledge("a", 1, c.acks); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if s, _ := p.Record(0); s != Acquired {
			t.Errorf("%s: a refused acknowledgement changed offset 0 to %v", c.name, s)
		}
	}
	if !reflect.DeepEqual(before, p.Encode()) {
		t.Fatal("refused acknowledgements changed the state")
	}
	// Per-offset types.
	if _, err := p.Acknowledge("a", 1, []Ack{{0, 2, []AckType{Accept, Release, Reject}}}); err != nil {
		t.Fatal(err)
	}
	for o, want := range []State{Acknowledged, Available, Archived} {
		if s, _ := p.Record(int64(o)); s != want && !(o == 0 && p.Start() > 0) {
			t.Errorf("offset %d: %v, want %v", o, s, want)
		}
	}
}

func TestLockExpiryReleases(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 1, 1, nil)
	if _, ok := p.Acquirable(999); !ok {
		t.Fatal("window with room reports nothing acquirable")
	}
	if got := p.Acquire("b", 999, 1, 1, nil); len(got) != 0 {
		t.Fatalf("b acquired a locked record: %v", got)
	}
	if d := p.NextDeadline(); d != 1000 {
		t.Fatalf("next deadline %d, want 1000", d)
	}
	got := p.Acquire("b", 1000, 1, 1, nil)
	if want := []Range{{0, 0, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after expiry: %v, want %v", got, want)
	}
	// a's lock is gone: its acknowledgement fails.
	if _, err := p.Acknowledge("a", 1001, []Ack{{0, 0, []AckType{Accept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("expired holder's accept: %v", err)
	}
}

func TestRenewKeepsLock(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 1, 1, nil)
	if ch, err := p.Acknowledge("a", 900, []Ack{{0, 0, []AckType{Renew}}}); err != nil || ch {
		t.Fatalf("renew: changed %v, %v", ch, err)
	}
	if got := p.Acquire("b", 1500, 1, 1, nil); len(got) != 0 {
		t.Fatalf("renewed record acquired by another: %v", got)
	}
	if _, err := p.Acknowledge("a", 1899, []Ack{{0, 0, []AckType{Accept}}}); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	p := New(0, cfg(3, 100))
	for i := int16(1); i <= 3; i++ {
		got := p.Acquire("a", 0, 1, 1, nil)
		if want := []Range{{0, 0, i}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: %v", i, got)
		}
		if _, err := p.Acknowledge("a", 0, []Ack{{0, 0, []AckType{Release}}}); err != nil {
			t.Fatal(err)
		}
	}
	if s, c := p.Record(0); s != Acknowledged || c != 0 || p.Start() != 1 {
		t.Fatalf("after the limit: offset 0 %v/%d, start %d", s, c, p.Start())
	}
	if got := p.Acquire("a", 0, 5, 1, nil); len(got) != 0 {
		t.Fatalf("delivered past the limit: %v", got)
	}
	// Expiry at the limit archives too.
	p = New(0, cfg(1, 100))
	p.Acquire("a", 0, 2, 2, nil)
	p.Acknowledge("a", 0, []Ack{{1, 1, []AckType{Accept}}})
	p.Expire(5000)
	if p.Start() != 2 {
		t.Fatalf("expired at the limit: start %d, want 2", p.Start())
	}
}

func TestWindowBound(t *testing.T) {
	p := New(0, cfg(5, 4))
	if got := p.Acquire("a", 0, 100, 100, nil); !reflect.DeepEqual(got, []Range{{0, 3, 1}}) {
		t.Fatalf("acquire over the bound: %v", got)
	}
	if _, ok := p.Acquirable(0); ok {
		t.Fatal("a full window reports room")
	}
	p.Acknowledge("a", 0, []Ack{{1, 3, []AckType{Accept}}})
	if _, ok := p.Acquirable(0); ok {
		t.Fatal("a window held at its start reports room")
	}
	p.Acknowledge("a", 0, []Ack{{0, 0, []AckType{Accept}}})
	if o, ok := p.Acquirable(0); !ok || o != 4 {
		t.Fatalf("acquirable %d %v, want 4", o, ok)
	}
}

func TestReleaseMember(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 2, 2, nil)
	p.Acquire("b", 0, 2, 4, nil)
	if !p.ReleaseMember("a", 0) || p.ReleaseMember("a", 0) {
		t.Fatal("ReleaseMember's report")
	}
	if got := p.Acquire("c", 1, 10, 4, nil); !reflect.DeepEqual(got, []Range{{0, 1, 2}}) {
		t.Fatalf("after release: %v", got)
	}
	if a, q, n := p.Counts(); a != 0 || q != 4 || n != 4 {
		t.Fatalf("counts %d %d %d", a, q, n)
	}
}

func TestAdvanceStart(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 5, 5, nil)
	p.AdvanceStart(3)
	if p.Start() != 3 || p.End() != 5 {
		t.Fatalf("window %d..%d", p.Start(), p.End())
	}
	p.AdvanceStart(50)
	if p.Start() != 50 || p.End() != 50 {
		t.Fatalf("window %d..%d", p.Start(), p.End())
	}
	if p.AdvanceStart(10) {
		t.Fatal("start moved back")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	p := New(7, cfg(2, 100))
	p.Acquire("a", 0, 10, 17, nil)
	p.Acknowledge("a", 0, []Ack{{7, 7, []AckType{Release}}, {8, 9, []AckType{Accept}}, {10, 10, []AckType{Reject}}, {11, 11, []AckType{Release}}})
	p.Acquire("b", 0, 1, 17, nil) // 7 again: count 2, at the limit
	q, err := Decode(p.Encode(), p.Config())
	if err != nil {
		t.Fatal(err)
	}
	// 7 was acquired at the limit: archived on decode, so start moves.
	if q.Start() != 11 || q.End() != 17 {
		t.Fatalf("decoded window %d..%d, want 11..17", q.Start(), q.End())
	}
	for o := int64(11); o < 17; o++ {
		s, c := q.Record(o)
		if s != Available || c != 1 {
			t.Errorf("offset %d: %v/%d, want available/1", o, s, c)
		}
	}
}

func TestDecodeRejectsCorrupt(t *testing.T) {
	p := New(3, cfg(5, 100))
	p.Acquire("a", 0, 4, 10, nil)
	good := p.Encode()
	for i := range good {
		if _, err := Decode(good[:i], p.Config()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated at %d: %v", i, err)
		}
	}
	bad := append(append([]byte(nil), good...), 0)
	if _, err := Decode(bad, p.Config()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v", err)
	}
	huge := []byte{encVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0}
	if _, err := Decode(huge, p.Config()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("huge window: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	p := New(3, cfg(5, 100))
	p.Acquire("a", 0, 4, 10, nil)
	p.Acknowledge("a", 0, []Ack{{4, 4, []AckType{Accept}}})
	f.Add(p.Encode())
	d := New(0, dlCfg(5))
	d.Acquire("a", 0, 3, 3, nil)
	d.AcknowledgeWithReasons("a", 1, []Ack{{0, 1, []AckType{Reject}}}, map[int64]string{1: "bad"})
	f.Add(d.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := Decode(b, cfg(5, 100))
		if err != nil {
			return
		}
		r, err := Decode(q.Encode(), cfg(5, 100))
		if err != nil || !reflect.DeepEqual(q.Encode(), r.Encode()) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}

func TestCloneIsIndependent(t *testing.T) {
	p := New(0, cfg(5, 100))
	p.Acquire("a", 0, 2, 2, nil)
	q := p.Clone()
	if _, err := q.Acknowledge("a", 0, []Ack{{0, 1, []AckType{Accept}}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 0 || q.Start() != 2 {
		t.Fatalf("starts %d and %d, want 0 and 2", p.Start(), q.Start())
	}
	if s, _ := p.Record(0); s != Acquired {
		t.Fatalf("the original changed: %v", s)
	}
}

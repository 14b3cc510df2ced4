package share

import (
	"reflect"
	"testing"
)

// maxJitter draws the longest delay allowed, so the test sees the
// exponential ceiling itself; a recorder checks what was asked.
type recJitter struct{ asked []int64 }

func (j *recJitter) f(n int64) int64 { j.asked = append(j.asked, n); return n }

func backoffCfg(limit int16, base, ceil int64) Config {
	return Config{LockDurationMs: 1000, DeliveryLimit: limit, MaxInFlight: 100, BackoffBaseMs: base, BackoffMaxMs: ceil}
}

// A released record is not acquirable before its backoff is over: the
// ceiling doubles with each delivery up to the cap, the delay is the
// jitter's draw over [0, ceiling], and a fetch in between gets the next
// record instead.
func TestReleaseBackoffExponentialCapped(t *testing.T) {
	j := &recJitter{}
	p := New(0, backoffCfg(10, 100, 350))
	p.SetJitter(j.f)
	now := int64(0)
	for delivery := 1; delivery <= 4; delivery++ {
		got := p.Acquire("a", now, 1, 1, nil)
		if want := []Range{{0, 0, int16(delivery)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d at %d: %v, want %v", delivery, now, got, want)
		}
		if _, err := p.Acknowledge("a", now, []Ack{{0, 0, []AckType{Release}}}); err != nil {
			t.Fatal(err)
		}
		delay := j.asked[len(j.asked)-1]
		if off, ok := p.Acquirable(now + delay - 1); ok && off == 0 {
			t.Fatalf("delivery %d: offset 0 acquirable 1 ms before its backoff of %d ms ends", delivery, delay)
		}
		if got := p.Acquire("b", now+delay-1, 1, 1, nil); len(got) != 0 {
			t.Fatalf("delivery %d: acquired %v during the backoff", delivery, got)
		}
		if d := p.NextDeadline(); d != now+delay {
			t.Fatalf("delivery %d: next deadline %d, want the backoff's end %d", delivery, d, now+delay)
		}
		now += delay
	}
	if want := []int64{100, 200, 350, 350}; !reflect.DeepEqual(j.asked, want) {
		t.Fatalf("ceilings %v, want %v", j.asked, want)
	}
}

// The draw is full jitter: a draw of 0 makes the record available at
// once, and a jitter returning out of range is clamped to [0, ceiling].
func TestBackoffJitterDrawAndClamp(t *testing.T) {
	for _, c := range []struct {
		draw, want int64
	}{{0, 0}, {37, 37}, {-5, 0}, {1 << 40, 100}} {
		p := New(0, backoffCfg(5, 100, 1000))
		p.SetJitter(func(int64) int64 { return c.draw })
		p.Acquire("a", 10, 1, 1, nil)
		p.Acknowledge("a", 10, []Ack{{0, 0, []AckType{Release}}})
		if c.want > 0 {
			if off, ok := p.Acquirable(10 + c.want - 1); ok && off == 0 {
				t.Errorf("draw %d: acquirable before %d", c.draw, 10+c.want)
			}
		}
		if off, ok := p.Acquirable(10 + c.want); !ok || off != 0 {
			t.Errorf("draw %d: not acquirable at %d", c.draw, 10+c.want)
		}
	}
}

// A lock's expiry and a member's leaving back off too; the expiry's delay
// counts from the lock's deadline, not from when it was noticed; base 0
// (the default) keeps the immediate redelivery.
func TestExpiryAndLeavingBackOff(t *testing.T) {
	p := New(0, backoffCfg(5, 500, 10_000))
	p.SetJitter(func(n int64) int64 { return n })
	p.Acquire("a", 0, 1, 1, nil)                               // lock until 1000
	p.Acquire("b", 0, 1, 2, nil)                               // offset 1
	if got := p.Acquire("c", 1200, 2, 2, nil); len(got) != 0 { // expired at 1000, back at 1500
		t.Fatalf("acquired %v during the expiry's backoff", got)
	}
	p.ReleaseMember("b", 1200) // offset 1 expired at 1000 as well
	if got := p.Acquire("c", 1500, 2, 2, nil); !reflect.DeepEqual(got, []Range{{0, 1, 2}}) {
		t.Fatalf("after the backoff: %v", got)
	}
	p.ReleaseMember("c", 1600) // second delivery: ceiling 1000
	if got := p.Acquire("d", 2599, 2, 2, nil); len(got) != 0 {
		t.Fatalf("acquired %v during the leaving member's backoff", got)
	}
	if got := p.Acquire("d", 2600, 2, 2, nil); !reflect.DeepEqual(got, []Range{{0, 1, 3}}) {
		t.Fatalf("after the leaving member's backoff: %v", got)
	}

	q := New(0, backoffCfg(5, 0, 0))
	q.SetJitter(func(int64) int64 { t.Fatal("jitter drawn with base 0"); return 0 })
	q.Acquire("a", 0, 1, 1, nil)
	q.Acknowledge("a", 0, []Ack{{0, 0, []AckType{Release}}})
	if got := q.Acquire("b", 0, 1, 1, nil); !reflect.DeepEqual(got, []Range{{0, 0, 2}}) {
		t.Fatalf("base 0: %v, want immediate redelivery", got)
	}
}

// A backoff is not stored (a loaded state has every record available);
// Backoff, which the broker calls on a state it loads, gives the
// records already delivered a fresh one, and leaves new ones alone.
func TestBackoffAfterLoad(t *testing.T) {
	cfg := backoffCfg(5, 100, 1000)
	p := New(0, cfg)
	p.Acquire("a", 0, 1, 2, nil)
	q, err := Decode(p.Encode(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	q.SetJitter(func(n int64) int64 { return n })
	q.Backoff(50)
	if got := q.Acquire("b", 149, 2, 2, nil); !reflect.DeepEqual(got, []Range{{1, 1, 1}}) {
		t.Fatalf("during the loaded backoff: %v, want only the new offset 1", got)
	}
	if got := q.Acquire("b", 150, 2, 2, nil); !reflect.DeepEqual(got, []Range{{0, 0, 2}}) {
		t.Fatalf("after the loaded backoff: %v", got)
	}
}

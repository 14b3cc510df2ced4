package share

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// model is a naive share partition: one entry per offset ever seen, no
// window, no slices; the randomized test runs both on the same operations
// and compares them offset by offset, and checks the invariants the
// package promises against its own record of what was delivered.
type model struct {
	cfg        Config
	start, end int64
	recs       map[int64]*record
}

func (m *model) rec(o int64) *record {
	r, ok := m.recs[o]
	if !ok {
		r = &record{}
		m.recs[o] = r
	}
	return r
}

func (m *model) release(r *record) {
	r.owner, r.deadline = "", 0
	r.state = Available
	if r.count >= m.cfg.DeliveryLimit {
		r.state = Archived
	}
}

func (m *model) settle(now int64) {
	for o := m.start; o < m.end; o++ {
		if r := m.rec(o); r.state == Acquired && r.deadline <= now {
			m.release(r)
		}
	}
	for m.start < m.end && m.rec(m.start).state.done() {
		m.start++
	}
}

func (m *model) acquire(member string, now int64, max int, upTo int64) map[int64]int16 {
	m.settle(now)
	got := map[int64]int16{}
	for o := m.start; o < upTo && o < m.start+m.cfg.MaxInFlight && max > 0; o++ {
		r := m.rec(o)
		if r.state != Available {
			continue
		}
		if r.count >= m.cfg.DeliveryLimit {
			r.state = Archived
			continue
		}
		r.state, r.owner, r.deadline = Acquired, member, now+m.cfg.LockDurationMs
		r.count++
		got[o] = r.count
		max--
		if o >= m.end {
			m.end = o + 1
		}
	}
	m.settle(now)
	return got
}

// holds: every offset of acks is acquired by member, lock live.
func (m *model) holds(member string, now int64, acks []Ack) bool {
	for _, a := range acks {
		for o := a.First; o <= a.Last; o++ {
			if o < m.start || o >= m.end {
				return false
			}
			if r := m.rec(o); r.state != Acquired || r.owner != member || r.deadline <= now {
				return false
			}
		}
	}
	return true
}

func (m *model) ack(member string, now int64, acks []Ack) {
	for _, a := range acks {
		for o := a.First; o <= a.Last; o++ {
			r := m.rec(o)
			switch a.typeOf(o) {
			case Accept:
				r.state, r.owner = Acknowledged, ""
			case Gap, Reject:
				r.state, r.owner = Archived, ""
			case Release:
				m.release(r)
			case Renew:
				r.deadline = now + m.cfg.LockDurationMs
			}
		}
	}
	m.settle(now)
}

// restart loses every lock, as Decode does.
func (m *model) restart() {
	for o := m.start; o < m.end; o++ {
		if r := m.rec(o); r.state == Acquired {
			m.release(r)
		}
	}
	m.settle(0)
}

func (m *model) compare(p *Partition) error {
	if p.Start() != m.start || p.End() != m.end {
		return fmt.Errorf("window %d..%d, model %d..%d", p.Start(), p.End(), m.start, m.end)
	}
	for o := m.start; o < m.end; o++ {
		r := m.rec(o)
		s, c := p.Record(o)
		owner, deadline := p.Owner(o)
		if s != r.state || c != r.count || owner != r.owner || (s == Acquired && deadline != r.deadline) {
			return fmt.Errorf("offset %d: %v/%d/%q/%d, model %v/%d/%q/%d", o, s, c, owner, deadline, r.state, r.count, r.owner, r.deadline)
		}
	}
	return nil
}

// checker is what the test saw delivered.
type checker struct {
	accepted   map[int64]bool
	archived   map[int64]bool
	deliveries map[int64]int16
}

func (c *checker) delivered(rs []Range, limit int16) error {
	for _, rg := range rs {
		for o := rg.First; o <= rg.Last; o++ {
			if c.accepted[o] || c.archived[o] {
				return fmt.Errorf("offset %d delivered after it was done", o)
			}
			c.deliveries[o]++
			if c.deliveries[o] != rg.DeliveryCount || rg.DeliveryCount > limit {
				return fmt.Errorf("offset %d: delivery %d reported as count %d (limit %d)", o, c.deliveries[o], rg.DeliveryCount, limit)
			}
		}
	}
	return nil
}

func TestModelRandomized(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		if err := runModel(seed, 400); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func randomAcks(rnd *rand.Rand, held []int64, start, end int64) []Ack {
	var acks []Ack
	prev := int64(-1)
	for _, o := range held {
		if rnd.Intn(3) == 0 || o <= prev {
			continue
		}
		last := o
		for last+1 < end && rnd.Intn(3) == 0 {
			last++
		}
		types := []AckType{AckType(rnd.Intn(5))}
		if rnd.Intn(3) == 0 {
			types = make([]AckType, last-o+1)
			for i := range types {
				types[i] = AckType(rnd.Intn(5))
			}
		}
		acks = append(acks, Ack{First: o, Last: last, Types: types})
		prev = last
	}
	if rnd.Intn(10) == 0 && end > start { // an offset perhaps not held
		o := start + rnd.Int63n(end-start)
		if o > prev {
			acks = append(acks, Ack{First: o, Last: o, Types: []AckType{Accept}})
		}
	}
	return acks
}

func runModel(seed int64, steps int) error {
	rnd := rand.New(rand.NewSource(seed))
	c := Config{LockDurationMs: int64(1 + rnd.Intn(50)), DeliveryLimit: int16(1 + rnd.Intn(4)), MaxInFlight: int64(1 + rnd.Intn(30))}
	p := New(0, c)
	m := &model{cfg: p.Config(), recs: map[int64]*record{}}
	ch := &checker{accepted: map[int64]bool{}, archived: map[int64]bool{}, deliveries: map[int64]int16{}}
	members := []string{"a", "b", "c"}
	var now, hw int64
	for step := 0; step < steps; step++ {
		now += int64(rnd.Intn(10))
		hw += int64(rnd.Intn(3))
		member := members[rnd.Intn(len(members))]
		switch op := rnd.Intn(10); {
		case op < 4:
			max := 1 + rnd.Intn(8)
			upTo := hw
			if from, ok := p.Acquirable(now); ok && from < hw {
				upTo = from + 1 + rnd.Int63n(hw-from) // a short read
			}
			got := p.Acquire(member, now, max, upTo, nil)
			want := m.acquire(member, now, max, upTo)
			n := 0
			for _, rg := range got {
				for o := rg.First; o <= rg.Last; o++ {
					if want[o] != rg.DeliveryCount {
						return fmt.Errorf("step %d: acquired %d with count %d, model %d", step, o, rg.DeliveryCount, want[o])
					}
					n++
				}
			}
			if n != len(want) || n > max {
				return fmt.Errorf("step %d: acquired %d, model %d, max %d", step, n, len(want), max)
			}
			if err := ch.delivered(got, m.cfg.DeliveryLimit); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
		case op < 8:
			var held []int64
			for o := m.start; o < m.end; o++ {
				if r := m.rec(o); r.state == Acquired && r.owner == member && rnd.Intn(4) != 0 {
					held = append(held, o)
				}
			}
			acks := randomAcks(rnd, held, m.start, m.end)
			m.settle(now)
			ok := m.holds(member, now, acks)
			_, err := p.Acknowledge(member, now, acks)
			if ok != (err == nil) {
				return fmt.Errorf("step %d: acknowledge %v by %s: %v, model holds %v", step, acks, member, err, ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidRecordState) {
				return fmt.Errorf("step %d: %v", step, err)
			}
			if ok {
				for _, a := range acks {
					for o := a.First; o <= a.Last; o++ {
						switch a.typeOf(o) {
						case Accept:
							ch.accepted[o] = true
						case Gap, Reject:
							ch.archived[o] = true
						}
					}
				}
				m.ack(member, now, acks)
			}
		case op == 8:
			p.ReleaseMember(member, now)
			for o := m.start; o < m.end; o++ {
				if r := m.rec(o); r.state == Acquired && r.owner == member {
					m.release(r)
				}
			}
			m.settle(now)
		default:
			q, err := Decode(p.Encode(), p.Config())
			if err != nil {
				return fmt.Errorf("step %d: decode: %v", step, err)
			}
			p = q
			m.restart()
		}
		p.Expire(now)
		m.settle(now)
		if err := m.compare(p); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		if p.End()-p.Start() > m.cfg.MaxInFlight {
			return fmt.Errorf("step %d: window %d..%d over its bound %d", step, p.Start(), p.End(), m.cfg.MaxInFlight)
		}
	}
	return nil
}

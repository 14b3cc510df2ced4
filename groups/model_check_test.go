package groups

import (
	"errors"
	"time"
)

// check asserts the coordinator's invariants on its internal state.
func (m *model) check(when string) {
	m.h.c.mu.Lock()
	g := m.h.c.groups["g"]
	if g == nil {
		m.h.c.mu.Unlock()
		return
	}
	if g.generation < m.lastGen {
		m.t.Fatalf("%s: generation went from %d back to %d", when, m.lastGen, g.generation)
	}
	m.lastGen = g.generation
	if (g.state == Empty) != (len(g.members) == 0) {
		m.t.Fatalf("%s: state %v with %d members", when, g.state, len(g.members))
	}
	if g.state == Stable || g.state == CompletingRebalance {
		if g.members[g.leader] == nil {
			m.t.Fatalf("%s: %v without a leader", when, g.state)
		}
	}
	if g.state == Stable {
		owner := make(map[TopicPartition]string)
		for id, mem := range g.members {
			tps, err := DecodeAssignment(mem.assignment)
			if err != nil {
				m.t.Fatal(err)
			}
			for _, p := range tps {
				if o, dup := owner[p]; dup {
					m.t.Fatalf("%s: generation %d gives %v to %s and %s", when, g.generation, p, o, id)
				}
				owner[p] = id
			}
		}
	}
	m.h.c.mu.Unlock()
	for _, c := range m.clients {
		for p := range c.held {
			if m.isMember(c) {
				if o := m.holder(p, c); o != nil {
					m.t.Fatalf("%s: %s and %s both hold %v", when, c.name, o.name, p)
				}
			}
		}
		// A member behind by a generation is fenced.
		if m.isMember(c) && c.gen != m.lastGen {
			if err := m.h.c.ValidateCommit("g", c.id, c.gen); !errors.Is(err, ErrIllegalGeneration) {
				m.t.Fatalf("%s: a commit from generation %d when the group is at %d: %v", when, c.gen, m.lastGen, err)
			}
		}
		// A removed member is fenced.
		if c.id != "" && !m.isMember(c) {
			if err := m.h.c.ValidateCommit("g", c.id, c.gen); !errors.Is(err, ErrUnknownMember) && !errors.Is(err, ErrCoordinatorClosed) {
				m.t.Fatalf("%s: a removed member's commit: %v", when, err)
			}
		}
	}
}

// converge lets the surviving clients run without new faults until the
// group is Stable and every survivor is stable, then checks the outcome:
// every partition held by exactly one survivor, counts within one.
func (m *model) converge() {
	for round := 0; ; round++ {
		if round > 2000 {
			m.t.Fatal("the group did not converge")
		}
		m.drain(true)
		settled := m.inflight == 0
		for _, c := range m.clients {
			if c.phase != gone && c.phase != stable {
				settled = false
			}
			if c.phase != gone {
				m.act(c)
				if c.phase == gone { // act may pick leave or crash
					continue
				}
			}
		}
		m.check("converging")
		if settled && m.allStable() {
			break
		}
		if round%20 == 19 {
			m.h.clock.Advance(time.Second) // lets crashed members expire
		}
	}
	m.checkFinal()
}

func (m *model) allStable() bool {
	for _, c := range m.clients {
		if c.phase == gone {
			continue
		}
		if c.phase != stable || m.h.c.Heartbeat("g", c.id, c.gen) != nil {
			return false
		}
	}
	// Crashed members must have expired: until then their partitions are
	// held by nobody who reads them.
	live := make(map[string]bool)
	for _, c := range m.clients {
		if c.phase != gone {
			live[c.id] = true
		}
	}
	d, err := m.h.c.Describe("g")
	if err != nil {
		return len(live) == 0
	}
	for _, mem := range d.Members {
		if !live[mem.MemberID] {
			return false
		}
	}
	return d.State == Stable || d.State == Empty
}

func (m *model) checkFinal() {
	holders := make(map[TopicPartition]int)
	lo, hi, live := -1, 0, 0
	for _, c := range m.clients {
		if c.phase == gone {
			continue
		}
		live++
		for p := range c.held {
			holders[p]++
		}
		lo = minPositive(lo, len(c.held))
		hi = max(hi, len(c.held))
	}
	if live == 0 {
		return
	}
	n := int(m.h.parts["orders"])
	if len(holders) != n {
		m.t.Fatalf("after converging %d of %d partitions are held", len(holders), n)
	}
	for p, k := range holders {
		if k != 1 {
			m.t.Fatalf("%v held by %d clients", p, k)
		}
	}
	if hi-lo > 1 {
		m.t.Fatalf("after converging counts range from %d to %d", lo, hi)
	}
}

func minPositive(a, b int) int {
	if a < 0 || b < a {
		return b
	}
	return a
}

package groups

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// GenerationStore records generation numbers before any member learns them
// (Config.Generations), so that a group's generations stay unique across
// coordinators: when the coordinator moves to another node (a cluster's
// metadata leader changed) or its node restarts, the next coordinator
// continues above every generation any coordinator ever told a member.
//
// Why recorded per generation, and not derived from the metadata term (say
// term<<16 | counter): a deposed coordinator that has not noticed yet keeps
// answering joins; with recording it cannot complete a rebalance (its write
// does not commit), with a derived number it could hand out one the next
// coordinator also uses. Recording costs one replicated write per
// rebalance (Kafka writes the group's metadata to __consumer_offsets
// before answering, the same cost) and numbers grow by one per rebalance
// (plus one when a group empties, and one lost to a failed write), so the
// int32 space lasts decades even at one rebalance a second.
type GenerationStore interface {
	// Next records, durably, a generation for group above after and above
	// every generation Next returned for the group before (from any
	// coordinator sharing the store), and returns it. It may block on a
	// replicated write; ctx bounds it. A failed Next may or may not have
	// recorded a number: such a number is never used, and a later Next
	// goes above it.
	Next(ctx context.Context, group string, after int32) (int32, error)
}

// MemoryGenerations is a GenerationStore in memory: what a Coordinator uses
// without Config.Generations (generations then stay unique for the life of
// that Coordinator only). Coordinators that share one MemoryGenerations
// continue each other's generations, as a cluster's do through its
// metadata; its Next never blocks, so the Coordinator calls it inline.
type MemoryGenerations struct {
	mu     sync.Mutex
	floors map[string]int32
}

// Next implements GenerationStore.
func (s *MemoryGenerations) Next(_ context.Context, group string, after int32) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.floors == nil {
		s.floors = map[string]int32{}
	}
	n, err := NextGeneration(group, max(after, s.floors[group]))
	if err == nil {
		s.floors[group] = n
	}
	return n, err
}

func (*MemoryGenerations) inline() {}

// inlineStore is a GenerationStore whose Next never blocks.
type inlineStore interface{ inline() }

// NextGeneration is the generation after floor, or an error when the int32
// space is used up (2^31 rebalances of one group: decades at one a second).
func NextGeneration(group string, floor int32) (int32, error) {
	if floor == math.MaxInt32 {
		return 0, fmt.Errorf("groups: group %q used up its generation numbers (the last is %d): use another group name", group, floor)
	}
	return max(floor, 0) + 1, nil
}

// Reservation timing: how long one Next may take, and how soon a failed
// one is tried again while members wait.
const (
	reserveTimeout = 10 * time.Second
	reserveRetry   = time.Second
)

// reserve makes sure g holds a recorded generation above its current one
// (g.granted) for the generation its join phase will start, asking the
// store unless a request is under way. Runs with c.mu held.
func (c *Coordinator) reserve(g *group) {
	if g.granted > g.generation || g.reserving {
		return
	}
	if _, ok := c.gens.(inlineStore); ok {
		if n, err := c.gens.Next(c.ctx, g.name, g.generation); err == nil {
			g.granted = n
		}
		return
	}
	g.reserving = true
	after := g.generation
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, reserveTimeout)
		n, err := c.gens.Next(ctx, g.name, after)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reserved(g, n, err)
	}()
}

// reserved takes the answer of a store's Next. A join phase that ended
// and waited for it (awaitingGen) completes, or after a failure tries
// again in a second (the group timer's next firing completes the join
// phase again, which asks again). One still under way uses the answer
// when it ends, or asks again then.
func (c *Coordinator) reserved(g *group, n int32, err error) {
	if c.closed || c.groups[g.name] != g {
		return
	}
	g.reserving = false
	if err == nil && n > g.granted {
		g.granted = n
	}
	if g.state != PreparingRebalance || !g.awaitingGen {
		return
	}
	if g.granted > g.generation {
		c.completeJoin(g)
		return
	}
	c.armGroupTimer(g, reserveRetry)
}

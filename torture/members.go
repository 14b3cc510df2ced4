package torture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/logd/logd/client"
)

// MemberGroup is the consumer group whose GroupMembers share the topic's
// partitions (the coordinator assigns them; see CheckGroupMembers).
const MemberGroup = "members"

// memberSession is the members' session timeout: the server's lowest by
// default, so that a member lost in a fault is replaced within the run.
const memberSession = 6 * time.Second

// member is one group member of the workload: a GroupConsumer and what it
// reported last.
type member struct {
	w    *Workload
	proc int
	g    *client.GroupConsumer // nil while NewGroupConsumer runs

	// Set by the callbacks during a Poll.
	added map[int32]int64 // partition -> position it starts at

	closing bool

	lastID   string
	lastGen  int32
	lastPart []int32
}

// groupMember runs member id of MemberGroup: it joins, polls its assigned
// partitions, commits their positions every few polls as the member of its
// generation, and after a while leaves (its partitions go to the others)
// and joins again.
func (w *Workload) groupMember(ctx context.Context, id int) {
	rng := w.rng(5000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		w.cfg.Logf("group member %d: %v", id, err)
		return
	}
	defer c.Close()
	for w.waitQuiet(ctx) {
		m := &member{w: w, proc: proc, lastGen: -1}
		jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		g, err := c.NewGroupConsumer(jctx, client.GroupConsumerOptions{Group: MemberGroup, Topic: w.cfg.Topic,
			Start: client.Earliest(), SessionTimeout: memberSession, ClientID: fmt.Sprintf("torture-%d", id),
			MaxWait: 300 * time.Millisecond, MaxBytes: readMaxBytes, OnAssigned: m.onAssigned, OnRevoked: m.onRevoked})
		cancel()
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		m.g = g
		m.report()
		for i := range 30 + rng.IntN(120) {
			if !w.waitQuiet(ctx) {
				break
			}
			m.poll(ctx)
			if i%3 == 2 {
				w.waitQuiet(ctx)
				m.commit(ctx)
			}
		}
		w.waitQuiet(ctx) // leaving commits and rebalances: an operation too
		m.close()
		sleep(ctx, time.Duration(rng.IntN(2000))*time.Millisecond)
	}
}

// onAssigned notes where the partitions the member starts reading start.
func (m *member) onAssigned(parts []int32) {
	if m.g == nil {
		return
	}
	if m.added == nil {
		m.added = map[int32]int64{}
	}
	for _, p := range parts {
		if off, ok := m.g.Position(p); ok {
			m.added[p] = off
		}
	}
}

// onRevoked records the commit the client made of the partitions given up
// (its result is hidden: unknown).
func (m *member) onRevoked(parts []int32) {
	if m.g == nil || m.closing {
		return
	}
	m.hiddenCommit(parts)
}

// hiddenCommit records the commit of parts' positions the client makes on
// its own (on revoke, on Close) as of unknown outcome.
func (m *member) hiddenCommit(parts []int32) {
	id, gen := m.g.Member()
	if id == "" {
		return
	}
	now := m.w.h.Now()
	for _, p := range parts {
		if off, ok := m.g.Position(p); ok {
			m.w.h.Add(Op{Process: m.proc, Kind: OpMemberCommit, Group: MemberGroup, Member: id, Generation: gen,
				Partition: p, Offset: off, Invoke: now, Complete: now, Outcome: OutcomeUnknown, Err: "committed by the client"})
		}
	}
}

// report records the member's assignment when it changed, and that it
// holds nothing once it is no longer a member (left, or its id was
// forgotten by the coordinator: it joins again at its next Poll).
func (m *member) report() {
	id, gen := m.g.Member()
	parts := m.g.Assigned()
	if m.closing {
		id, parts = "", nil
	}
	if id == "" {
		if m.lastID != "" {
			m.add(m.lastID, m.lastGen, nil)
			m.lastID = ""
		}
		return
	}
	if id == m.lastID && gen == m.lastGen && slices.Equal(parts, m.lastPart) {
		return
	}
	m.lastID, m.lastGen, m.lastPart = id, gen, parts
	m.add(id, gen, parts)
}

func (m *member) add(id string, gen int32, parts []int32) {
	now := m.w.h.Now()
	m.w.h.Add(Op{Process: m.proc, Kind: OpAssign, Group: MemberGroup, Member: id, Generation: gen,
		Partitions: parts, Invoke: now, Complete: now, Outcome: OutcomeOK})
}

// positions returns the position of every assigned partition.
func (m *member) positions() map[int32]int64 {
	pos := map[int32]int64{}
	for _, p := range m.g.Assigned() {
		if off, ok := m.g.Position(p); ok {
			pos[p] = off
		}
	}
	return pos
}

// poll runs one Poll and records it as a read per partition, like
// recordPoll, but only for the partitions that returned records (see
// below).
func (m *member) poll(ctx context.Context) {
	w, g := m.w, m.g
	before := m.positions()
	id0, gen0 := g.Member()
	m.added = nil
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	inv := w.h.Now()
	recs, err := g.Poll(pctx)
	comp := w.h.Now()
	cancel()
	defer m.report()
	if err != nil {
		if ctx.Err() == nil {
			w.h.Add(Op{Process: m.proc, Kind: OpRead, Group: MemberGroup, Member: id0, Generation: gen0,
				Invoke: inv, Complete: comp, Outcome: OutcomeFail, Err: err.Error()})
		}
		var oor *client.OutOfRangeError
		if errors.As(err, &oor) {
			to := client.Earliest() // below the log start: retention removed it
			if oor.Offset > oor.LogStartOffset {
				to = client.AtOffset(oor.HighWatermark)
			}
			g.SeekPartition(ctx, oor.Partition, to)
		}
		return
	}
	id1, gen1 := g.Member()
	after := m.positions()
	byPart := map[int32][]ReadRecord{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], ReadRecord{Offset: r.Offset, Value: w.intern(r.Value), Timestamp: r.Timestamp.UnixMilli()})
	}
	// An empty partition proves nothing: a Poll ends early (a rebalance
	// signal, records of another partition) without having fetched every
	// partition, so a member's read is recorded only for the records it
	// returned (the followers' reads check empty answers). A soak caught
	// this as "a read began after offset X was acknowledged and returned
	// nothing".
	for p, rs := range byPart {
		from, ok := before[p]
		if start, added := m.added[p]; added {
			from, ok = start, true
		}
		if !ok {
			// Where the Poll began reading p is unknown (the client did
			// not tell of it): the read is recorded from its first
			// record, never left out (records left out are records the
			// checker finds delivered to no member).
			from = rs[0].Offset
		}
		next, ok := after[p]
		if !ok {
			next = rs[len(rs)-1].Offset + 1
		}
		w.h.Add(Op{Process: m.proc, Kind: OpRead, Group: MemberGroup, Member: id1, Generation: gen1, Partition: p,
			From: from, Next: next, Records: rs, Invoke: inv, Complete: comp, Outcome: OutcomeOK})
	}
}

// commit commits the positions of the assigned partitions as the member
// of its generation, recorded as one commit per partition: refused by the
// group (the member missed a rebalance) is a failure, any other error an
// unknown outcome.
func (m *member) commit(ctx context.Context) {
	id, gen := m.g.Member()
	offs := m.positions()
	if id == "" || len(offs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	inv := m.w.h.Now()
	err := m.g.CommitOffsets(cctx, offs)
	comp := m.w.h.Now()
	for p, off := range offs {
		op := Op{Process: m.proc, Kind: OpMemberCommit, Group: MemberGroup, Member: id, Generation: gen,
			Partition: p, Offset: off, Invoke: inv, Complete: comp, Outcome: OutcomeOK}
		switch {
		case err == nil:
		case errors.Is(err, client.ErrIllegalGeneration), errors.Is(err, client.ErrUnknownMember), errors.Is(err, client.ErrRebalanceInProgress):
			op.Outcome, op.Err = OutcomeFail, err.Error()
		default:
			op.Outcome, op.Err = OutcomeUnknown, err.Error()
		}
		m.w.h.Add(op)
	}
}

// close leaves the group; Close commits the positions first.
func (m *member) close() {
	m.hiddenCommit(m.g.Assigned())
	m.closing = true // Close's OnRevoked: recorded above
	m.g.Close()
	m.report()
}

// observeMembers reads group's committed offsets every few hundred
// milliseconds, between two descriptions of the group: when both name the
// same generation and coordinator (and generations says a description's
// generation is the one the members commit in: not a KIP-848 group, whose
// members commit in their own epochs), the offsets are observed in that
// generation.
func (w *Workload) observeMembers(ctx context.Context, group string, id int, generations bool) {
	rng := w.rng(6000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		return
	}
	defer c.Close()
	admin := c.Admin()
	for ctx.Err() == nil {
		sleep(ctx, time.Duration(100+rng.IntN(200))*time.Millisecond)
		w.waitQuiet(ctx)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		inv := w.h.Now()
		d1, err1 := admin.DescribeGroup(cctx, group)
		offs, err := admin.FetchOffsets(cctx, group, w.cfg.Topic)
		d2, err2 := admin.DescribeGroup(cctx, group)
		comp := w.h.Now()
		cancel()
		if err != nil {
			continue
		}
		gen := int32(-1)
		if generations && err1 == nil && err2 == nil && d1.Generation == d2.Generation && d1.Coordinator == d2.Coordinator {
			gen = d1.Generation
		}
		seen := map[int32]int64{}
		for _, o := range offs {
			seen[o.Partition] = o.Offset
		}
		for p := range w.cfg.Partitions {
			off, ok := seen[p]
			if !ok {
				off = -1
			}
			w.h.Add(Op{Process: proc, Kind: OpMemberObserve, Group: group, Generation: gen, Partition: p, Offset: off,
				Invoke: inv, Complete: comp, Outcome: OutcomeOK})
		}
	}
}

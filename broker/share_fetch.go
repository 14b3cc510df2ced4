package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/share"
)

// shareSession is a member's share session on this node (KIP-932): the
// partitions it fetches and the epoch its next request names.
type shareSessionKey struct{ group, member string }

type shareSession struct {
	conn  uint64 // the connection that opened it (ShareFetchRequest.Conn)
	next  int32
	parts []SharePartition // in the order added
}

func (s *shareSession) add(ref SharePartition) {
	for _, p := range s.parts {
		if p == ref {
			return
		}
	}
	s.parts = append(s.parts, ref)
}

func (s *shareSession) forget(ref SharePartition) {
	for i, p := range s.parts {
		if p == ref {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

// sessionStep checks a request's session epoch and moves the session on:
// 0 opens a new session, owned by conn, -1 closes it (final), any other
// must be the epoch the session expects. It returns the session's partitions after
// the request's are added and its forgotten ones removed.
func (b *Broker) sessionStep(g *shareGroup, member string, conn uint64, epoch int32, add, forget []SharePartition) ([]SharePartition, ShareCode, string) {
	b.share.mu.Lock()
	defer b.share.mu.Unlock()
	key := shareSessionKey{g.name, member}
	s := b.share.sessions[key]
	switch {
	case epoch == 0:
		s = &shareSession{conn: conn}
		b.share.sessions[key] = s
	case s == nil:
		return nil, ShareSessionNotFound, "no share session for this member on this node: open one with epoch 0"
	case epoch == -1:
		delete(b.share.sessions, key)
	case epoch != s.next:
		return nil, ShareInvalidSessionEpoch, "share session epoch out of order: open a new session with epoch 0"
	}
	for _, ref := range add {
		s.add(ref)
	}
	for _, ref := range forget {
		s.forget(ref)
	}
	if s.next == math.MaxInt32 {
		s.next = 1
	} else {
		s.next++
	}
	return append([]SharePartition(nil), s.parts...), ShareOK, ""
}

// sharePartition returns the share partition of group for ref (its
// state is loaded by shareCurrent, under its lock).
func (b *Broker) sharePartition(g *shareGroup, ref SharePartition) (*sharePart, error) {
	c, err := b.topics.Config(ref.Topic)
	if err != nil {
		return nil, err
	}
	part, err := b.topics.Partition(ref.Topic, ref.Partition)
	if err != nil {
		return nil, err
	}
	b.share.mu.Lock()
	defer b.share.mu.Unlock()
	sp := g.parts[ref]
	if sp == nil || sp.created != c.CreatedMs {
		sp = &sharePart{ref: ref, created: c.CreatedMs, part: part, changed: make(chan struct{})}
		g.parts[ref] = sp
	}
	return sp, nil
}

// shareCurrent makes sp's state the stored one when it was never loaded
// or another node wrote it since (a leader elsewhere meanwhile: the locks
// held here are gone with it), starting a share partition never used at
// the group's share.auto.offset.reset (stored at once, so a restart or a
// failover does not move a "latest" start). It fails on a node that may
// not serve sp (in a cluster, not its partition's leader). A state kept
// takes the group's configuration when it changed. sp.mu is held.
func (b *Broker) shareCurrent(ctx context.Context, g *shareGroup, sp *sharePart) error {
	cfg, gen := b.shareConfigOf(g)
	st := b.plane.shares(b)
	ver, err := st.version(ctx, sp.part, g.name)
	if err != nil {
		return err
	}
	if sp.p != nil && sp.ver == ver {
		if sp.cfgGen != gen {
			sp.p.SetConfig(b.sharePartConfig(cfg))
			sp.cfgGen = gen
		}
		return nil
	}
	b.share.mu.Lock()
	jitter := b.share.jitter
	b.share.mu.Unlock()
	enc, ver, ok, err := st.load(ctx, sp.part, g.name, sp.created)
	if err != nil {
		return err
	}
	var p *share.Partition
	if ok {
		if p, err = share.Decode(enc, b.sharePartConfig(cfg)); err != nil {
			return fmt.Errorf("share group %q, %s/%d: %w", g.name, sp.ref.Topic, sp.ref.Partition, err)
		}
		// The backoffs of the node that served the state before are not
		// stored: its records already delivered start a fresh one.
		p.SetJitter(jitter)
		p.Backoff(time.Now().UnixMilli())
	} else {
		p = share.New(cfg.resetOffset(sp.part.Log), b.sharePartConfig(cfg))
		p.SetJitter(jitter)
		if ver, err = st.store(ctx, sp.part, g.name, sp.created, p.Encode()); err != nil {
			return err
		}
	}
	if sp.p != nil {
		sp.signal()
	}
	sp.p, sp.ver, sp.cfgGen = p, ver, gen
	return nil
}

// storeShare makes q durable as sp's state and then sp's. sp.mu is held.
func (b *Broker) storeShare(ctx context.Context, g *shareGroup, sp *sharePart, q *share.Partition) error {
	ver, err := b.plane.shares(b).store(ctx, sp.part, g.name, sp.created, q.Encode())
	if err != nil {
		return err
	}
	sp.p, sp.ver = q, ver
	return nil
}

// shareAcknowledge applies one partition's acknowledgements, durable
// before it returns; the state in memory changes only once the write
// succeeded.
func (b *Broker) shareAcknowledge(ctx context.Context, g *shareGroup, member string, sp *sharePart, acks []ShareAck, reasons map[int64]string) (ShareCode, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := b.shareCurrent(ctx, g, sp); err != nil {
		return ShareOK, err
	}
	q := sp.p.Clone()
	now := time.Now().UnixMilli()
	changed, err := q.AcknowledgeWithReasons(member, now, acks, reasons)
	switch {
	case errors.Is(err, share.ErrInvalidRecordState):
		return ShareInvalidRecordState, err
	case errors.Is(err, share.ErrInvalidAck):
		return ShareInvalidRequest, err
	case err != nil:
		return ShareOK, err
	}
	if changed {
		if err := b.storeShare(ctx, g, sp, q); err != nil {
			return ShareOK, err
		}
	}
	sp.p = q
	sp.signal()
	b.shareDeadLetters(ctx, g, sp, now)
	return ShareOK, nil
}

// shareAcquire acquires up to max records of sp for member and reads
// them: the whole batches from the first acquired offset. The
// acquisition is durable before it returns (the delivery counts).
func (b *Broker) shareAcquire(ctx context.Context, g *shareGroup, member string, sp *sharePart, max, maxBytes int) ([]byte, []ShareRange, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := b.shareCurrent(ctx, g, sp); err != nil {
		return nil, nil, err
	}
	part := sp.part
	now := time.Now().UnixMilli()
	b.shareDeadLetters(ctx, g, sp, now)
	q := sp.p.Clone()
	q.AdvanceStart(part.Log.StartOffset())
	ordered := q.Config().KeyOrdering
	if ordered {
		if err := b.shareLearnKeys(part, q); err != nil {
			return nil, nil, err
		}
	}
	from, ok := q.Acquirable(now)
	if !ok {
		return nil, nil, nil
	}
	fp, err := b.readAt(part, from, maxBytes, nil)
	var oor *OutOfRangeError
	if errors.As(err, &oor) {
		// Trimmed meanwhile: start at the log's start next time.
		q.AdvanceStart(oor.StartOffset)
		sp.p = q
		return nil, nil, nil
	}
	if err != nil || len(fp.Batches) == 0 {
		return nil, nil, err
	}
	var keys share.Keys
	if ordered {
		keys = shareKeys(fp.Batches)
	}
	ranges := q.Acquire(member, now, max, fp.NextOffset, keys)
	if len(ranges) == 0 {
		return nil, nil, nil
	}
	if err := b.storeShare(ctx, g, sp, q); err != nil {
		return nil, nil, err
	}
	return fp.Batches, ranges, nil
}

// nextDeadline is the earliest lock deadline among parts, zero if none.
func nextDeadline(parts []*sharePart) time.Time {
	var min int64
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p == nil {
			sp.mu.Unlock()
			continue
		}
		if d := sp.p.NextDeadline(); d != 0 && (min == 0 || d < min) {
			min = d
		}
		sp.mu.Unlock()
	}
	if min == 0 {
		return time.Time{}
	}
	return time.UnixMilli(min)
}

// authorizeShare checks read on the group.
func (b *Broker) authorizeShare(ctx context.Context, p Principal, group string) error {
	return b.Authorize(ctx, p, auth.OpRead, auth.Group(group))
}

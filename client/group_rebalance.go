package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// rejoin joins the group (again) and applies the assignment: the
// cooperative protocol keeps the partitions that stay, commits and drops
// those that move, and joins once more so the coordinator can give them to
// their new owner; the eager protocol gives up everything before joining.
func (g *GroupConsumer) rejoin(ctx context.Context) error {
	g.mu.Lock()
	g.joining = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.joining = false
		g.mu.Unlock()
	}()
	for {
		if err := g.commitQuietly(ctx, g.owned); err != nil {
			return err
		}
		if g.eager && !g.owned.empty() {
			g.revoke(g.owned)
		}
		resp, err := g.join(ctx)
		if err != nil {
			return err
		}
		if g.takeLost() {
			g.loseOwned()
		}
		assigned := topicParts{}
		for _, t := range resp.Assignment {
			if slices.Contains(g.topics, t.Topic) && len(t.Partitions) > 0 {
				assigned[t.Topic] = append(assigned[t.Topic], t.Partitions...)
			}
		}
		for _, ps := range assigned {
			slices.Sort(ps)
		}
		revoked := g.owned.minus(assigned)
		if !revoked.empty() {
			if err := g.commitQuietly(ctx, revoked); err != nil {
				return err
			}
			g.revoke(revoked)
		}
		added := assigned.minus(g.owned)
		g.owned = assigned
		if err := g.buildReader(ctx, added); err != nil {
			g.needReader = true
			return err
		}
		if revoked.empty() {
			return nil
		}
		// Cooperative: the partitions given up go to their new owner in
		// the next generation, which this join starts.
	}
}

// takeLost reports whether the group forgot this member since the last
// join, and clears it.
func (g *GroupConsumer) takeLost() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	lost := g.lost
	g.lost = false
	return lost
}

// loseOwned gives up every owned partition without committing (Kafka's
// lost partitions: OnRevoked is told) and drops their readers, so those
// assigned again start at the group's committed offsets, not at this
// member's positions. A member the group forgot still claims its
// partitions when it joins again, so it usually keeps them; but another
// member may have owned them meanwhile and committed past this member's
// positions (a committed offset would move back when such a member went
// on from its own position).
func (g *GroupConsumer) loseOwned() {
	if !g.owned.empty() {
		g.revoke(g.owned)
	}
	for t, cons := range g.cons {
		cons.Close()
		delete(g.cons, t)
	}
}

// revoke stops reading parts (their positions were committed). OnRevoked
// is told of those OnAssigned was told of.
func (g *GroupConsumer) revoke(parts topicParts) {
	parts = parts.clone()
	g.owned = g.owned.minus(parts)
	g.needReader = true
	gone := parts.minus(g.unannounced)
	g.unannounced = g.unannounced.minus(parts)
	if !gone.empty() {
		g.revoked(gone)
	}
}

// buildReader makes the consumers of the owned partitions where they
// changed: the partitions kept go on from their positions, the new ones
// start at the group's committed offsets (else Start). added are announced
// to OnAssigned once the consumers started; when they fail to, added are
// kept (unannounced) and announced by the next call that succeeds, unless
// a rebalance took them away meanwhile.
func (g *GroupConsumer) buildReader(ctx context.Context, added topicParts) error {
	g.unannounced = g.unannounced.union(added).intersect(g.owned)
	for t, old := range g.cons {
		if len(g.owned[t]) == 0 {
			old.Close()
			delete(g.cons, t)
		}
	}
	for t, ps := range g.owned {
		old := g.cons[t]
		if old != nil && !g.needReader && slices.Equal(old.Partitions(), ps) {
			continue
		}
		cons, err := g.c.NewConsumer(ctx, ConsumerOptions{Topic: t, Partitions: ps, Group: g.opts.Group,
			Start: g.opts.Start, Follow: true, MaxWait: g.opts.MaxWait, MaxBytes: g.opts.MaxBytes,
			Isolation: g.opts.Isolation})
		if err != nil {
			return err
		}
		if old != nil {
			for _, cp := range cons.parts {
				if was := old.part(cp.partition); was != nil {
					cp.position, cp.committed = was.position, was.committed
				}
			}
			old.Close()
		}
		g.cons[t] = cons
	}
	g.needReader = false
	if added := g.unannounced; !added.empty() {
		g.unannounced = nil
		g.assigned(added)
	}
	return nil
}

// join runs JoinGroup until it succeeds: again at once after a rebalance
// or generation answer, with a new member id when the coordinator forgot
// this one (a failover: the partitions owned are claimed again), and with a
// backoff while no coordinator answers, for up to the client's retry
// timeout.
func (g *GroupConsumer) join(ctx context.Context) (*logdv1.JoinGroupResponse, error) {
	g.mu.Lock()
	req := &logdv1.JoinGroupRequest{Group: g.opts.Group, MemberId: g.memberID, ClientId: g.opts.ClientID,
		Topics: g.topics, Assignors: []string{g.opts.Assignor},
		SessionTimeoutMs: int32(g.opts.SessionTimeout.Milliseconds()), OwnedGeneration: g.generation}
	coord := g.coord
	g.mu.Unlock()
	for _, t := range g.topics {
		if ps := g.owned[t]; len(ps) > 0 {
			req.Owned = append(req.Owned, &logdv1.TopicPartitions{Topic: t, Partitions: ps})
		}
	}
	backoff, failingSince := firstAdminBackoff, time.Time{}
	for {
		var resp *logdv1.JoinGroupResponse
		addr, err := g.c.call(ctx, coord, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
			resp, err = logdv1.NewGroupsClient(cc).JoinGroup(ctx, req)
			return err
		})
		switch {
		case err == nil:
			g.mu.Lock()
			g.coord, g.memberID, g.generation, g.joined = addr, resp.MemberId, resp.Generation, true
			if resp.SessionTimeoutMs > 0 {
				g.session = time.Duration(resp.SessionTimeoutMs) * time.Millisecond
			}
			g.mu.Unlock()
			return resp, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, ErrUnknownMember), errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrIllegalGeneration):
			if errors.Is(err, ErrUnknownMember) {
				req.MemberId = ""
				g.mu.Lock()
				g.lost = true
				g.mu.Unlock()
			}
			select { // the group moved on meanwhile: join again, without spinning
			case <-time.After(firstAdminBackoff / 5):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if !g.c.retriable(ctx, err, time.Since(failingSince)) {
			return nil, fmt.Errorf("join group %q: %w", g.opts.Group, err)
		}
		coord = "" // ask the bootstrap nodes who coordinates now
		if time.Since(failingSince) > g.c.opts.retryTimeout {
			return nil, fmt.Errorf("join group %q: still failing after %s: %w", g.opts.Group, time.Since(failingSince).Round(100*time.Millisecond), err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-g.stop:
			return nil, ErrClosed
		}
		backoff = min(2*backoff, maxAdminBackoff)
	}
}

// heartbeats keeps the membership alive every session timeout / 3 until
// Close, and tells Poll when to join again.
func (g *GroupConsumer) heartbeats() {
	defer close(g.hbDone)
	for {
		g.mu.Lock()
		interval := g.session / 3
		g.mu.Unlock()
		select {
		case <-g.stop:
			return
		case <-time.After(interval):
		}
		g.heartbeat(interval)
	}
}

func (g *GroupConsumer) heartbeat(timeout time.Duration) {
	g.mu.Lock()
	if !g.joined || g.joining || g.memberID == "" {
		g.mu.Unlock()
		return
	}
	id, gen, coord := g.memberID, g.generation, g.coord
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-g.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	addr, err := g.c.call(ctx, coord, func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := logdv1.NewGroupsClient(cc).Heartbeat(ctx, &logdv1.HeartbeatRequest{Group: g.opts.Group, MemberId: id, Generation: gen})
		return err
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.memberID != id || g.generation != gen || g.joining {
		return // a join answered meanwhile
	}
	switch {
	case err == nil:
		g.coord = addr
		return
	case errors.Is(err, ErrUnknownMember):
		g.memberID, g.lost = "", true // removed, or a new coordinator: join as a new member
	case errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrIllegalGeneration):
	default:
		g.coord = "" // unreachable or moved: ask the bootstrap nodes next time
		return
	}
	g.joined = false
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// minus returns the elements of a not in b, keeping a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

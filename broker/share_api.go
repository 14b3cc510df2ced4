package broker

import (
	"context"
	"time"

	"github.com/logd/logd/share"
)

// shareCall is what ShareFetch and ShareAcknowledge share: the group, the
// session's partitions, and the answer by partition.
type shareCall struct {
	g      *shareGroup
	parts  []SharePartition
	res    ShareFetchResult
	index  map[SharePartition]int
	denied map[string]error
	held   int64 // the read budget the answer's batches hold
}

func (c *shareCall) entry(ref SharePartition) *ShareFetchedPartition {
	i, ok := c.index[ref]
	if !ok {
		i = len(c.res.Partitions)
		c.index[ref] = i
		c.res.Partitions = append(c.res.Partitions, ShareFetchedPartition{SharePartition: ref})
	}
	return &c.res.Partitions[i]
}

// begin authorizes, checks the request and moves its session on; a
// non-OK Code in the returned result ends the request.
func (b *Broker) shareBegin(ctx context.Context, r ShareFetchRequest, fetch bool) (*shareCall, error) {
	if err := b.authorizeShare(ctx, r.Principal, r.Group); err != nil {
		return nil, err
	}
	c := &shareCall{index: map[SharePartition]int{}, denied: map[string]error{}}
	if r.Group == "" || r.Member == "" {
		c.res.Code, c.res.Message = ShareInvalidRequest, "a share request names its group and member id"
		return c, nil
	}
	b.share.mu.Lock()
	c.g = b.shareGroupLocked(r.Group)
	b.share.mu.Unlock()
	cfg, _ := b.shareConfigOf(c.g)
	if c.res.LockMs = b.sharePartConfig(cfg).LockDurationMs; c.res.LockMs == 0 {
		c.res.LockMs = share.DefaultLockDurationMs
	}
	var add []SharePartition
	if fetch && r.SessionEpoch != -1 {
		for _, fp := range r.Partitions {
			add = append(add, fp.SharePartition)
		}
	}
	c.parts, c.res.Code, c.res.Message = b.sessionStep(c.g, r.Member, r.Conn, r.SessionEpoch, add, r.Forgotten)
	return c, nil
}

// applyAcks applies each partition's acknowledgements.
func (b *Broker) applyAcks(ctx context.Context, c *shareCall, r ShareFetchRequest) {
	for _, fp := range r.Partitions {
		if len(fp.Acks) == 0 {
			continue
		}
		e := c.entry(fp.SharePartition)
		e.Acked = true
		if r.SessionEpoch == 0 {
			e.AckCode = ShareInvalidSessionEpoch
			continue
		}
		if e.AckErr = b.authorizeRead(ctx, r.Principal, fp.Topic, c.denied); e.AckErr != nil {
			continue
		}
		sp, err := b.sharePartition(c.g, fp.SharePartition)
		if err != nil {
			e.AckErr = b.topicLookup(ctx, fp.Topic, err)
			continue
		}
		e.AckCode, e.AckErr = b.shareAcknowledge(ctx, c.g, r.Member, sp, fp.Acks, boundReasons(fp.Reasons))
	}
}

// ShareAcknowledge applies a member's acknowledgements (KIP-932's
// ShareAcknowledge), each partition's durable before the answer; epoch -1
// closes the session and releases what the member still holds.
func (b *Broker) ShareAcknowledge(ctx context.Context, r ShareFetchRequest) (ShareFetchResult, error) {
	if err := b.enter(); err != nil {
		return ShareFetchResult{}, err
	}
	defer b.leave()
	c, _, err := b.shareAckPhase(ctx, r, false)
	return resultOf(c), err
}

// shareAckPhase is what ShareAcknowledge and ShareFetch both do first:
// check the member's session, apply its acknowledgements and, for epoch
// -1, close the session releasing what the member holds. more reports
// whether a fetch goes on to acquire records.
func (b *Broker) shareAckPhase(ctx context.Context, r ShareFetchRequest, fetch bool) (c *shareCall, more bool, err error) {
	c, err = b.shareBegin(ctx, r, fetch)
	if err != nil || c.res.Code != ShareOK {
		return c, false, err
	}
	b.applyAcks(ctx, c, r)
	if r.SessionEpoch == -1 {
		b.releaseMembers(c.g, []string{r.Member})
		return c, false, nil
	}
	return c, true, nil
}

func resultOf(c *shareCall) ShareFetchResult {
	if c == nil {
		return ShareFetchResult{}
	}
	return c.res
}

// shareTarget is a partition a ShareFetch acquires from.
type shareTarget struct {
	sp   *sharePart
	ch   <-chan struct{} // the log's next commit
	done bool
}

// ShareFetch applies a member's piggy-backed acknowledgements, then
// acquires up to MaxRecords records of its session's partitions and
// returns them, waiting up to MaxWait for records to arrive, be released
// or have their locks expire.
func (b *Broker) ShareFetch(ctx context.Context, r ShareFetchRequest) (ShareFetchResult, error) {
	if err := b.enter(); err != nil {
		return ShareFetchResult{}, err
	}
	defer b.leave()
	c, more, err := b.shareAckPhase(ctx, r, true)
	if !more {
		return resultOf(c), err
	}
	targets := b.shareTargets(ctx, c, r)
	wait := min(r.MaxWait, MaxWait)
	deadline := time.Now().Add(wait)
	for {
		chans := make([]<-chan struct{}, 0, 2*len(targets))
		for _, t := range targets {
			t.sp.mu.Lock()
			chans = append(chans, t.sp.changed)
			t.sp.mu.Unlock()
			chans = append(chans, t.ch)
		}
		if b.acquireAll(ctx, c, r, targets) > 0 || !time.Now().Before(deadline) || allDone(targets) {
			break
		}
		if !b.shareAwait(ctx, chans, deadline, targets) {
			break
		}
	}
	if c.held > 0 {
		c.res.Release = b.budget.releaser(c.held)
	}
	return c.res, nil
}

// shareTargets resolves the session's partitions, answering each that
// cannot be read with its error.
func (b *Broker) shareTargets(ctx context.Context, c *shareCall, r ShareFetchRequest) []*shareTarget {
	var out []*shareTarget
	for _, ref := range c.parts {
		if err := b.authorizeRead(ctx, r.Principal, ref.Topic, c.denied); err != nil {
			c.entry(ref).Err = err
			continue
		}
		sp, err := b.sharePartition(c.g, ref)
		if err != nil {
			c.entry(ref).Err = b.topicLookup(ctx, ref.Topic, err)
			continue
		}
		out = append(out, &shareTarget{sp: sp, ch: sp.part.Log.Changed()})
	}
	return out
}

// acquireAll acquires from each target in turn within the request's
// bounds and returns the records acquired. It reads under the node's read
// budget, as a fetch does: the request's bytes are taken before the
// reads (no lock held while it waits), what the batches do not use is
// returned, and the rest is held in c.held until the answer is sent.
func (b *Broker) acquireAll(ctx context.Context, c *shareCall, r ShareFetchRequest, targets []*shareTarget) int {
	left := r.MaxRecords
	if left <= 0 {
		left = 500
	}
	bytes := r.MaxBytes
	if bytes <= 0 || bytes > MaxFetchBytes {
		bytes = MaxFetchBytes
	}
	want := min(int64(bytes), b.budget.Bytes)
	if err := b.budget.Acquire(ctx, want); err != nil {
		for _, t := range targets {
			if !t.done {
				c.entry(t.sp.ref).Err, t.done = err, true
			}
		}
		return 0
	}
	used := int64(0)
	defer func() {
		used = min(used, want)
		b.budget.Release(want - used)
		c.held += used
	}()
	n := 0
	for _, t := range targets {
		if t.done || left <= 0 || bytes <= 0 {
			continue
		}
		batches, ranges, err := b.shareAcquire(ctx, c.g, r.Member, t.sp, left, bytes)
		if err != nil {
			c.entry(t.sp.ref).Err, t.done = err, true
			continue
		}
		if len(ranges) == 0 {
			continue
		}
		e := c.entry(t.sp.ref)
		e.Batches, e.Acquired = batches, ranges
		used += int64(cap(batches))
		t.done = true
		for _, rg := range ranges {
			k := int(rg.Last - rg.First + 1)
			n += k
			left -= k
		}
		bytes -= len(batches)
	}
	return n
}

// allDone: no target is left to acquire from (each answered or failed).
func allDone(targets []*shareTarget) bool {
	for _, t := range targets {
		if !t.done {
			return false
		}
	}
	return true
}

// shareAwait waits for a change of a target (a commit, an
// acknowledgement, a release), the earliest lock deadline, or the
// request's deadline; false when the request must end.
func (b *Broker) shareAwait(ctx context.Context, chans []<-chan struct{}, deadline time.Time, targets []*shareTarget) bool {
	parts := make([]*sharePart, len(targets))
	for i, t := range targets {
		parts[i] = t.sp
	}
	until := deadline
	if d := nextDeadline(parts); !d.IsZero() && d.Before(until) {
		until = d
	}
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	a := &anyChanged{chans: chans}
	ch := a.c()
	defer a.stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-b.shutdown:
		return false
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
)

// Replica returns this node's replica of p when it leads p's group, or
// *NotLeaderError naming the leader (or, when this node has no replica,
// the preferred leader, which leads or knows who does).
func (c *Cluster) Replica(ctx context.Context, p *partition.Partition) (*replication.Replica, error) {
	r, set, ok := c.localReplica(p)
	if !ok {
		// This node has the topic but its metadata does not: it may be
		// behind (a restarted node's metadata is its last snapshot's until
		// a leader lets its log replay), or the topic is being deleted.
		// Only the current metadata leader may say it is gone.
		return nil, c.TopicLookup(ctx, p.Topic, fmt.Errorf("%w: %q", partition.ErrTopicNotFound, p.Topic))
	}
	what := "partition " + p.Name()
	if r == nil {
		for _, n := range set {
			if n != c.self {
				return nil, &NotLeaderError{What: what, Leader: c.node(n), Untouched: true}
			}
		}
		return nil, &NotLeaderError{What: what, Untouched: true}
	}
	if to := c.preferredWaker(r, set); to != "" {
		return nil, &NotLeaderError{What: what + " (asleep: its preferred leader wakes it)", Leader: c.node(to), Untouched: true}
	}
	r.Touch()
	if r.Asleep() {
		// hibernate.go says why it does not wait for the election, and
		// why wakes are paced.
		if !c.mayWake() {
			return nil, &NotLeaderError{What: what + " (asleep; this node is waking others first: retry)", Untouched: true, Deferred: true}
		}
		if err := r.Wake(true); err != nil {
			return nil, kind.Errorf(kind.ErrUnavailable, "%s: waking its sleeping replica: %v: retry", what, err)
		}
		return nil, &NotLeaderError{What: what + " (it was asleep and is electing a leader: retry)", Untouched: true, Woke: true}
	}
	if r.IsLeader() {
		return r, nil
	}
	id, _ := r.Leader()
	return nil, &NotLeaderError{What: what, Leader: c.node(string(id)), Untouched: true}
}

// AwaitLeader waits, up to max or ctx's end, until this node's replica of
// p's group knows a leader (itself or another node); it reports whether
// one is known. A caller whose use woke the replica (NotLeaderError.Woke)
// and that serves one partition per request waits with it for the
// election rather than answering "retry": on a busy node the client's
// retry came seconds later, and the group it had woken was kept awake for
// nothing meanwhile.
//
// It looks after awaitPoll, then twice as long after each look up to
// awaitPollMax: an election on a quiet node is seen within milliseconds,
// and the requests waiting in a burst over thousands of sleeping
// partitions do not spin (a look every 5 ms, as before, is 200,000 looks
// a second for a client with 1,024 requests in flight; 40 per request
// over the 2 s wait instead of 400).
func (c *Cluster) AwaitLeader(ctx context.Context, p *partition.Partition, max time.Duration) bool {
	r, _, _ := c.localReplica(p)
	if r == nil {
		return false
	}
	end := time.NewTimer(max)
	defer end.Stop()
	poll := awaitPoll
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		if id, _ := r.Leader(); id != "" && !r.Asleep() {
			return true
		}
		select {
		case <-t.C:
			poll = min(2*poll, awaitPollMax)
			t.Reset(poll)
		case <-end.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// AwaitLeader's looks: the first after awaitPoll, then twice as long each
// time up to awaitPollMax.
const (
	awaitPoll    = 2 * time.Millisecond
	awaitPollMax = 50 * time.Millisecond
)

// preferredWaker is the node a use of r's group goes to instead of waking
// r here: when r sleeps knowing no leader (a group never elected since it
// was created or its node restarted), the node LeaderOf names (waker: the
// preferred leader, or the next replica of set when it is unreachable), if
// that is another node; otherwise "" (wake here).
// So the first uses of a new topic, which a client sends wherever it
// likes, elect each partition on its preferred leader, as LeaderOf names
// it: waking all of them where they arrived put every leader of a
// 10,000-partition topic on one node, whose heartbeats then overloaded it,
// and the leader spreading after it moved thousands of them again. A node
// that knew a leader wakes its replica itself. Each redirect goes to a
// replica earlier in set than the node redirecting (the node sent to names
// itself or one before it), so they end, after at most len(set)-1.
func (c *Cluster) preferredWaker(r *replication.Replica, set []string) string {
	if rec, _ := r.Slept(); !r.Asleep() || rec.LeaderID != "" {
		return ""
	}
	if to := c.waker(set); to != c.self {
		return to
	}
	return ""
}

// localReplica is this node's replica of p's group (nil when it has none)
// and the nodes the metadata places it on; ok is false when the metadata
// has no partition p.
func (c *Cluster) localReplica(p *partition.Partition) (r *replication.Replica, set []string, ok bool) {
	cfg, set, ok := c.meta.FSM.Placement(p.Topic, p.ID)
	if !ok {
		return nil, nil, false
	}
	return c.rn.Replica(c.groups.of(cfg, p.ID)), set, true
}

// leadsWait bounds how long Leads waits for a new leader's proof.
const leadsWait = time.Second

// Leads reports whether this node leads p's group with a high watermark
// that is the group's: once it has proven, for its term, that every entry
// of earlier terms is applied here (replication.Replica.Leading, waited
// for up to leadsWait). A new leader's high watermark may lag until then (a
// follower learns the commit index late, and one that fell asleep may not
// have learned it at all). It does not wake a sleeping replica, which
// leads nothing here.
func (c *Cluster) Leads(ctx context.Context, p *partition.Partition) bool {
	r, _, _ := c.localReplica(p)
	if r == nil || !r.IsLeader() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, leadsWait)
	defer cancel()
	_, err := r.Leading(ctx)
	return err == nil
}

// readConfirmer is a Raft group whose leader serves reads: a partition's
// replica or the metadata group.
type readConfirmer interface {
	ConfirmRead(ctx context.Context) error
}

// Linearizable makes a read served by the leader of g current: every
// record (or metadata change) acknowledged before it is applied here, and
// this replica still leads. Without it a leader cut off from the others
// (or paused past an election) would answer from its stale state. The
// proof is a barrier started after the read arrived (g.ConfirmRead:
// replication.ReadIndex, which says why Raft's VerifyLeader is not one),
// shared by concurrent reads. A node that turns out not to lead answers
// *NotLeaderError.
func (c *Cluster) Linearizable(ctx context.Context, g readConfirmer, what string) error {
	err := g.ConfirmRead(ctx)
	if err == nil {
		return nil
	}
	var nl *replication.NotLeaderError
	if errors.As(err, &nl) {
		return &NotLeaderError{What: what, Leader: c.node(string(nl.LeaderID)), Untouched: true}
	}
	return kind.Errorf(kind.ErrUnavailable, "%s: cannot confirm this node still leads (%v): retry", what, err)
}

// MetaLinearizable is Linearizable for the metadata group.
func (c *Cluster) MetaLinearizable(ctx context.Context) error {
	return c.Linearizable(ctx, c.meta, metaWhat)
}

// TopicLookup answers a request for a topic this node does not have: it
// may only be behind. When the metadata lists the topic and the node has
// not created it yet it answers kind.ErrUnavailable (retry); when the node has
// not heard of a topic just created, *NotLeaderError sending the client
// to the metadata leader, which knows. Only the metadata leader, current,
// answers err (partition.ErrTopicNotFound).
func (c *Cluster) TopicLookup(ctx context.Context, topic string, err error) error {
	if !errors.Is(err, partition.ErrTopicNotFound) {
		return err
	}
	if c.meta.FSM.HasTopic(topic) {
		return kind.Errorf(kind.ErrUnavailable, "topic %q is being set up on this node: retry", topic)
	}
	if !c.meta.IsLeader() {
		if lead := c.MetaLeader(); lead.APIAddr != "" && !Forwarded(ctx) {
			return &NotLeaderError{What: metaWhat + " (this node has not heard of topic " + strconv.Quote(topic) + " yet)", Leader: lead}
		}
		return &NotLeaderError{What: metaWhat}
	}
	if err := c.MetaLinearizable(ctx); err != nil {
		return err
	}
	if c.meta.FSM.HasTopic(topic) {
		return kind.Errorf(kind.ErrUnavailable, "topic %q is being set up on this node: retry", topic)
	}
	return err
}

// ListOffset resolves spec on the leader of p: nil, nil when this node
// leads p (current: after a read barrier), so the caller answers from the
// local log; else the leader's answer over the peer service.
func (c *Cluster) ListOffset(ctx context.Context, p *partition.Partition, spec int64) (*PartitionOffset, error) {
	r, err := c.Replica(ctx, p)
	if err == nil {
		// Served here: the answer (the high watermark) must be current.
		return nil, c.Linearizable(ctx, r, "partition "+p.Name())
	}
	var nl *NotLeaderError
	if !errors.As(err, &nl) || nl.Leader.RaftAddr == "" || Forwarded(ctx) {
		return nil, err
	}
	po, err := c.peerListOffset(ctx, nl.Leader.RaftAddr, p.Topic, p.ID, spec)
	if err != nil {
		return nil, err
	}
	return &po, nil
}

// PartitionLog is p's log for resolving offsets: the local log when this
// node leads p, else the leader's answers.
func (c *Cluster) PartitionLog(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
	po, err := c.ListOffset(ctx, p, Latest)
	if err != nil {
		return nil, err
	}
	if po == nil {
		return p.Log, nil
	}
	return offsets.LogFuncs{
		Start: func() int64 { return po.LogStart },
		HW:    func() int64 { return po.HighWatermark },
		ForTime: func(ts int64) (int64, error) {
			at, err := c.ListOffset(ctx, p, ts)
			if err != nil {
				return 0, err
			}
			if at == nil {
				return p.Log.OffsetForTime(ts)
			}
			return at.Offset, nil
		},
	}, nil
}

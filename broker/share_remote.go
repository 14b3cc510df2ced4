package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/share"
)

// A share group's membership lives on its coordinator, each of its share
// partitions on that partition's leader. The calls the coordinator serves
// that read or change share partitions (the share offsets admin calls,
// the native describe) reach each partition where it is led: on this
// node, or over the peer service on the leader its refusal names
// (opSharePart), which authorizes the principal the call carries again
// and serves that one partition. A leader that cannot be reached answers
// for its partitions alone; the other partitions are still answered.
//
// A member that leaves the group or misses its session timeout at the
// coordinator has its records released there and, in a cluster, on every
// other node (opShareRelease, made of each at once, in the background,
// each call bounded by cluster.StatusTimeout): the records it holds on
// the partitions led elsewhere go back to the others without waiting for
// their locks to expire. A node that does not answer keeps them until
// they expire. The release is the node's own doing, no client's: no
// principal is authorized for it (only a node of the cluster can make a
// peer call), and it changes no durable state.

// The operations (their names are part of the peer protocol).
const (
	opSharePart    = "share.partition"
	opShareRelease = "share.release"
)

// sharePartOp is what a share partition call does.
type sharePartOp string

const (
	// sharePartDescribe reads the partition's state; it stores nothing.
	sharePartDescribe sharePartOp = "describe"
	// sharePartAlter starts the state again at the request's offset.
	sharePartAlter sharePartOp = "alter"
	// sharePartForget starts the state again where the group's
	// share.auto.offset.reset says, at the time of the call.
	sharePartForget sharePartOp = "forget"
)

// The request and answer of opSharePart.
type (
	sharePartReq struct {
		Group     string      `json:"group"`
		Op        sharePartOp `json:"op"`
		Topic     string      `json:"topic"`
		Partition int32       `json:"partition"`
		Offset    int64       `json:"offset,omitempty"`
	}
	shareReleaseReq struct {
		Group   string   `json:"group"`
		Members []string `json:"members"`
	}
	sharePartAnswer struct {
		// Stored is false when the group has no state for the
		// partition (a describe; Desc is then zero but for its
		// partition).
		Stored bool                      `json:"stored"`
		Desc   SharePartitionDescription `json:"desc"`
	}
)

// handleSharePartPeers serves the share partition calls a coordinator
// passes on to this node, a partition's leader.
func (b *Broker) handleSharePartPeers() {
	handle(b, opSharePart, func(ctx context.Context, pr Principal, r sharePartReq) (any, error) {
		if err := b.authorizeSharePart(ctx, pr, r.Op, r.Group, r.Topic); err != nil {
			return nil, err
		}
		if err := b.enter(); err != nil {
			return nil, err
		}
		defer b.leave()
		b.share.mu.Lock()
		g := b.shareGroupLocked(r.Group)
		b.share.mu.Unlock()
		return b.sharePartHere(ctx, g, r)
	})
	handle(b, opShareRelease, func(_ context.Context, _ Principal, r shareReleaseReq) (any, error) {
		b.share.mu.Lock()
		g := b.share.groups[r.Group]
		b.share.mu.Unlock()
		if g != nil {
			b.releaseMembers(g, r.Members)
		}
		return none{}, nil
	})
}

// shareMembersLeft releases what members held in g, on this node and, in
// a cluster, on the others (in the background). The caller is inside
// b.enter.
func (b *Broker) shareMembersLeft(g *shareGroup, members []string) {
	if len(members) == 0 {
		return
	}
	b.releaseMembers(g, members)
	if b.plane.alone() {
		return
	}
	nodes, _ := b.Nodes(context.Background())
	self := b.LocalNode().ID
	req := shareReleaseReq{Group: g.name, Members: members}
	for _, n := range nodes {
		if n.ID == self || n.RaftAddr == "" {
			continue
		}
		b.bg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cluster.StatusTimeout)
			defer cancel()
			if err := b.peerCall(ctx, n.RaftAddr, opShareRelease, "", req, &none{}); err != nil {
				b.logger.Debug("share group members not released on a node", "group", g.name, "node", n.ID, "err", err)
			}
		})
	}
}

// authorizeSharePart authorizes op for pr: on the group (describe, read
// for an alter, delete for a forget) and on the topic (describe for a
// describe, read otherwise).
func (b *Broker) authorizeSharePart(ctx context.Context, pr Principal, op sharePartOp, group, topic string) error {
	gop, top := auth.OpDescribe, auth.OpDescribe
	switch op {
	case sharePartDescribe:
	case sharePartAlter:
		gop, top = auth.OpRead, auth.OpRead
	case sharePartForget:
		gop, top = auth.OpDelete, auth.OpRead
	default:
		return fmt.Errorf("share partition call %q: %w", op, errInvalidSharePartOp)
	}
	if err := b.Authorize(ctx, pr, gop, auth.Group(group)); err != nil {
		return err
	}
	return b.Authorize(ctx, pr, top, auth.Topic(topic))
}

var errInvalidSharePartOp = fmt.Errorf("unknown share partition operation")

// sharePart serves r for pr where the partition is led: here, or on the
// leader this node's refusal names. The caller authorized it.
func (b *Broker) sharePart(ctx context.Context, pr Principal, g *shareGroup, r sharePartReq) (sharePartAnswer, error) {
	out, err := b.sharePartHere(ctx, g, r)
	addr, ok := passOn(ctx, err)
	if !ok {
		return out, err
	}
	out = sharePartAnswer{}
	err = peerCall(ctx, b.Cluster(), addr, opSharePart, pr, r, &out)
	return out, err
}

// describeSharePart describes g's share partition ref where it is led,
// once p may describe its topic (denied remembers the topics refused).
func (b *Broker) describeSharePart(ctx context.Context, p Principal, g *shareGroup, ref SharePartition, denied map[string]error) (sharePartAnswer, error) {
	err, seen := denied[ref.Topic]
	if !seen {
		err = b.Authorize(ctx, p, auth.OpDescribe, auth.Topic(ref.Topic))
		denied[ref.Topic] = err
	}
	if err != nil {
		return sharePartAnswer{}, err
	}
	return b.sharePart(ctx, p, g, sharePartReq{Group: g.name, Op: sharePartDescribe, Topic: ref.Topic, Partition: ref.Partition})
}

// sharePartHere serves r on this node: a *NotLeaderError when another
// node leads the partition.
func (b *Broker) sharePartHere(ctx context.Context, g *shareGroup, r sharePartReq) (sharePartAnswer, error) {
	ref := SharePartition{Topic: r.Topic, Partition: r.Partition}
	out := sharePartAnswer{Desc: SharePartitionDescription{SharePartition: ref}}
	sp, err := b.sharePartition(g, ref)
	if err != nil {
		return out, b.topicLookup(ctx, r.Topic, err)
	}
	switch r.Op {
	case sharePartDescribe:
		out.Desc, out.Stored, err = b.shareDescribe(ctx, g, sp, time.Now())
		return out, err
	case sharePartAlter:
		return out, b.shareReset(ctx, g, sp, r.Offset)
	case sharePartForget:
		cfg, _ := b.shareConfigOf(g)
		return out, b.shareReset(ctx, g, sp, cfg.resetOffset(sp.part.Log))
	}
	return out, fmt.Errorf("share partition call %q: %w", r.Op, errInvalidSharePartOp)
}

// shareDescribe describes sp's state as stored (stored false when none
// is), storing nothing. It fails on a node that may not serve sp.
func (b *Broker) shareDescribe(ctx context.Context, g *shareGroup, sp *sharePart, now time.Time) (d SharePartitionDescription, stored bool, err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := b.plane.shares(b)
	ver, err := st.version(ctx, sp.part, g.name)
	if err != nil {
		return d, false, err
	}
	p := sp.p
	if p == nil || sp.ver != ver {
		enc, _, ok, err := st.load(ctx, sp.part, g.name, sp.created)
		if err != nil || !ok {
			return d, false, err
		}
		if p, err = share.Decode(enc, share.Config{}); err != nil {
			return d, false, err
		}
	}
	if p.Expire(now.UnixMilli()) && p == sp.p {
		sp.signal()
	}
	return describeSharePart(sp, p, now), true, nil
}

// describeSharePart describes p, sp's state: its counts, its backlog
// (records from its start to the high watermark, acknowledged ones in
// flight included) and the age of its oldest record not acknowledged
// (the first record at or after its start, by its batch's first
// timestamp; 0 when every record is acknowledged).
func describeSharePart(sp *sharePart, p *share.Partition, now time.Time) SharePartitionDescription {
	a, q, n := p.Counts()
	d := SharePartitionDescription{SharePartition: sp.ref, Start: p.Start(), End: p.End(), Available: a, Acquired: q, InFlight: n}
	l := sp.part.Log
	from := max(p.Start(), l.StartOffset())
	hw := l.HighWatermark()
	if from >= hw {
		return d
	}
	d.Backlog = hw - from
	b, err := l.Read(from, 1)
	if err != nil || len(b) == 0 {
		return d
	}
	if info, err := batch.ParseHeader(b); err == nil && info.FirstTimestamp > 0 {
		d.OldestAge = max(now.Sub(time.UnixMilli(info.FirstTimestamp)), 0)
	}
	return d
}

package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Defaults of GroupConsumerOptions.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultAssignor       = "cooperative-sticky"
)

// GroupConsumerOptions configure a GroupConsumer.
type GroupConsumerOptions struct {
	Group string
	// Topic and Topics are the topics the member subscribes to (Topic,
	// then Topics; at least one). The group shares all their partitions
	// among its members.
	Topic  string
	Topics []string
	// Start is where a partition the group never committed starts
	// (default Earliest).
	Start Position
	// Assignor: "cooperative-sticky" (default: a rebalance moves only the
	// partitions that must move, the others are read on), "range" or
	// "round-robin" (eager: every member gives up all its partitions at
	// each rebalance).
	Assignor string
	// SessionTimeout: the coordinator gives the member's partitions to the
	// others when it hears nothing for this long (default 10 s; the server
	// bounds it, by default to [6 s, 30 min]). Heartbeats go every third.
	SessionTimeout time.Duration
	// ClientID is shown by DescribeGroup and prefixes the member id
	// (default "logd-client").
	ClientID string
	// MaxWait, MaxBytes and Isolation are as in ConsumerOptions.
	MaxWait   time.Duration
	MaxBytes  int32
	Isolation Isolation
	// OnAssigned is called from Poll with the partitions the member starts
	// reading, once their reader started (a Poll that failed to start it
	// leaves them to the next Poll, which tells of them before returning
	// their records); OnRevoked with those it stops reading, after their
	// positions were committed (or without a commit when the group forgot
	// the member: its partitions are lost, and those assigned again start
	// at the group's committed offsets). Both name partitions of the first topic only; a
	// member of several topics uses OnAssignedTopics and OnRevokedTopics
	// (topic -> partitions), called as well.
	OnAssigned       func(partitions []int32)
	OnRevoked        func(partitions []int32)
	OnAssignedTopics func(partitions map[string][]int32)
	OnRevokedTopics  func(partitions map[string][]int32)
}

// GroupConsumer is a member of a consumer group: the group's members share
// the topic's partitions, each partition read by one member at a time. It
// joins in NewGroupConsumer, heartbeats in the background, follows
// rebalances in Poll (committing the positions of the partitions it gives
// up, so the next owner continues there), commits with its member id and
// generation (a member that missed a rebalance cannot overwrite its
// successor's offsets) and leaves the group on Close.
//
// Delivery is at least once: records Poll returned after the last commit
// may be read again by the partition's next owner. Poll and the other
// methods are for one goroutine; end a Poll (cancel its context) before
// Close.
type GroupConsumer struct {
	c      *Client
	admin  *Admin
	opts   GroupConsumerOptions
	topics []string // subscribed, the first topic first, then sorted
	eager  bool

	// Poll's goroutine only.
	cons       map[string]*Consumer // reads owned, one per topic with partitions
	owned      topicParts
	needReader bool // cons must be rebuilt for owned
	// unannounced are owned partitions OnAssigned was not told of yet:
	// their reader failed to start (buildReader announces them once one
	// does).
	unannounced topicParts

	mu         sync.Mutex // guards the membership, shared with the heartbeats
	coord      string     // the coordinator's address, learnt from answers
	memberID   string
	generation int32
	joined     bool // false: the next Poll joins again
	joining    bool
	// lost: the group forgot this member (ErrUnknownMember: removed after
	// its session, or a new coordinator), so another member may have
	// read and committed its partitions meanwhile: the next join drops
	// every position (see loseOwned).
	lost    bool
	session time.Duration
	wake    chan struct{} // capacity 1: the heartbeats ask Poll to re-join

	stop      chan struct{}
	hbDone    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// NewGroupConsumer joins opts.Group for its topics and returns once the
// member has its first assignment (possibly no partition, when the group
// has more members than the topics have partitions).
func (c *Client) NewGroupConsumer(ctx context.Context, opts GroupConsumerOptions) (*GroupConsumer, error) {
	topics, err := subscribedTopics(opts)
	if err != nil {
		return nil, err
	}
	if opts.Assignor == "" {
		opts.Assignor = DefaultAssignor
	}
	if opts.Assignor == "round-robin" {
		opts.Assignor = "roundrobin"
	}
	if !slices.Contains([]string{"cooperative-sticky", "range", "roundrobin"}, opts.Assignor) {
		return nil, fmt.Errorf("group consumer: unknown assignor %q (cooperative-sticky, range or round-robin)", opts.Assignor)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.ClientID == "" {
		opts.ClientID = "logd-client"
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	g := &GroupConsumer{c: c, admin: c.Admin(), opts: opts, topics: topics, eager: opts.Assignor != "cooperative-sticky",
		cons: map[string]*Consumer{}, owned: topicParts{},
		generation: -1, session: opts.SessionTimeout, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), hbDone: make(chan struct{})}
	if err := g.rejoin(ctx); err != nil {
		g.leave()
		close(g.hbDone)
		return nil, err
	}
	go g.heartbeats()
	return g, nil
}

// Member returns the member id and generation the consumer holds now.
func (g *GroupConsumer) Member() (id string, generation int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.memberID, g.generation
}

// Assigned returns the partitions of the first topic the member reads
// now, ascending (AssignedTopics: of every topic).
func (g *GroupConsumer) Assigned() []int32 { return slices.Clone(g.owned[g.topics[0]]) }

// AssignedTopics returns the partitions the member reads now, by topic.
func (g *GroupConsumer) AssignedTopics() map[string][]int32 { return g.owned.clone() }

// Position returns the next offset Poll returns from partition p of the
// first topic.
func (g *GroupConsumer) Position(p int32) (int64, bool) { return g.TopicPosition(g.topics[0], p) }

// TopicPosition returns the next offset Poll returns from topic's
// partition p.
func (g *GroupConsumer) TopicPosition(topic string, p int32) (int64, bool) {
	if cons := g.cons[topic]; cons != nil {
		return cons.Position(p)
	}
	return 0, false
}

// SeekPartition moves partition p of the first topic, one of the
// assigned, to pos.
func (g *GroupConsumer) SeekPartition(ctx context.Context, p int32, pos Position) error {
	return g.SeekTopicPartition(ctx, g.topics[0], p, pos)
}

// SeekTopicPartition moves topic's partition p, one of the assigned, to
// pos.
func (g *GroupConsumer) SeekTopicPartition(ctx context.Context, topic string, p int32, pos Position) error {
	cons := g.cons[topic]
	if cons == nil || !slices.Contains(g.owned[topic], p) {
		return fmt.Errorf("seek: partition %d of %q is not assigned to this member", p, topic)
	}
	return cons.SeekPartition(ctx, p, pos)
}

// Poll returns the next records of the assigned partitions, following a
// rebalance first when one is under way (which may block until the other
// members re-joined). With nothing to read it waits up to MaxWait and
// returns no records.
func (g *GroupConsumer) Poll(ctx context.Context) ([]ConsumedRecord, error) {
	select {
	case <-g.stop:
		return nil, ErrClosed
	default:
	}
	g.mu.Lock()
	joined := g.joined
	g.mu.Unlock()
	if !joined {
		if err := g.rejoin(ctx); err != nil {
			return nil, err
		}
	}
	if g.needReader {
		if err := g.buildReader(ctx, nil); err != nil {
			return nil, err
		}
	}
	if len(g.cons) == 0 {
		return nil, g.idle(ctx)
	}
	return g.pollTopics(ctx)
}

// idle waits up to MaxWait for a reason to poll again.
func (g *GroupConsumer) idle(ctx context.Context) error {
	select {
	case <-g.wake:
	case <-time.After(g.opts.MaxWait):
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stop:
		return ErrClosed
	}
	return nil
}

// Commit stores the positions of the assigned partitions for the group, as
// this member of its generation.
func (g *GroupConsumer) Commit(ctx context.Context) error {
	return g.commit(ctx, g.owned)
}

// CommitOffsets stores offsets (partition of the first topic -> next
// offset to consume) for the group, as this member of its generation. When
// the group refuses it because it moved on without this member
// (ErrIllegalGeneration, ErrUnknownMember: the member was paused past its
// session timeout, say), the next Poll joins again.
func (g *GroupConsumer) CommitOffsets(ctx context.Context, offsets map[int32]int64) error {
	return g.CommitTopicOffsets(ctx, map[string]map[int32]int64{g.topics[0]: offsets})
}

// CommitTopicOffsets is CommitOffsets for several topics: topic ->
// partition -> next offset to consume.
func (g *GroupConsumer) CommitTopicOffsets(ctx context.Context, offsets map[string]map[int32]int64) error {
	var list []CommittedOffset
	for t, offs := range offsets {
		for p, off := range offs {
			list = append(list, CommittedOffset{Topic: t, Partition: p, Offset: off})
		}
	}
	if len(list) == 0 {
		return nil
	}
	id, gen := g.Member()
	if err := g.admin.CommitMemberOffsets(ctx, g.opts.Group, id, gen, list); err != nil {
		g.refused(err, id, gen)
		return err
	}
	for _, o := range list {
		if cons := g.cons[o.Topic]; cons != nil {
			if cp := cons.part(o.Partition); cp != nil {
				cp.committed = o.Offset
			}
		}
	}
	return nil
}

// refused makes the next Poll join again when the group refused a commit
// of member id at generation gen because it moved on without it.
func (g *GroupConsumer) refused(err error, id string, gen int32) {
	unknown := errors.Is(err, ErrUnknownMember)
	if !unknown && !errors.Is(err, ErrIllegalGeneration) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.memberID != id || g.generation != gen {
		return
	}
	if unknown {
		g.memberID, g.lost = "", true
	}
	g.joined = false
}

// commit commits the positions of parts that moved since their last commit.
func (g *GroupConsumer) commit(ctx context.Context, parts topicParts) error {
	offs := make(map[string]map[int32]int64)
	for t, ps := range parts {
		cons := g.cons[t]
		if cons == nil {
			continue
		}
		for _, p := range ps {
			if cp := cons.part(p); cp != nil && cp.position != cp.committed {
				if offs[t] == nil {
					offs[t] = make(map[int32]int64)
				}
				offs[t][p] = cp.position
			}
		}
	}
	return g.CommitTopicOffsets(ctx, offs)
}

// commitQuietly commits parts during a rebalance, bounded by a third of the
// session: a refusal (the member missed a generation) or an unavailable
// coordinator only means the next owner reads those records again.
func (g *GroupConsumer) commitQuietly(ctx context.Context, parts topicParts) error {
	id, _ := g.Member()
	if id == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, g.opts.SessionTimeout/3)
	defer cancel()
	_ = g.commit(cctx, parts) // a refusal is expected here: see above
	return ctx.Err()
}

// Close commits the assigned partitions' positions, leaves the group (its
// partitions go to the other members at once) and stops the consumer.
func (g *GroupConsumer) Close() error {
	g.closeOnce.Do(func() {
		close(g.stop)
		<-g.hbDone
		ctx, cancel := context.WithTimeout(context.Background(), g.opts.SessionTimeout/2)
		defer cancel()
		var err error
		if id, _ := g.Member(); id != "" {
			err = g.commit(ctx, g.owned)
		}
		if gone := g.owned.minus(g.unannounced); err == nil && !gone.empty() {
			g.revoked(gone)
		}
		g.closeErr = errors.Join(err, g.leave())
		for t, cons := range g.cons {
			cons.Close()
			delete(g.cons, t)
		}
	})
	return g.closeErr
}

// leave tells the coordinator the member is gone.
func (g *GroupConsumer) leave() error {
	id, _ := g.Member()
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.SessionTimeout/2)
	defer cancel()
	g.mu.Lock()
	coord := g.coord
	g.mu.Unlock()
	_, err := g.c.call(ctx, coord, func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := logdv1.NewGroupsClient(cc).LeaveGroup(ctx, &logdv1.LeaveGroupRequest{Group: g.opts.Group, MemberId: id})
		return err
	})
	if err != nil && !errors.Is(err, ErrUnknownMember) {
		return fmt.Errorf("leave group %q: %w", g.opts.Group, err)
	}
	return nil
}

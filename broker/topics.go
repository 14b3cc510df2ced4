package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

// PartitionInfo is a partition's state. In a cluster the bounds are its
// leader's from Topic, this node's replica's from TopicLayout (size and
// segments stay this node's replica's, 0 without one).
type PartitionInfo struct {
	ID            int32
	LogStart      int64
	HighWatermark int64
	SizeBytes     int64
	Segments      int32
	Leader        string   // node id; "" when unknown
	Replicas, ISR []string // node ids; ISR: the replicas (Raft has no ISR)
	LeaderEpoch   int32    // the leader's Raft term (truncated); 0 on a single node
}

// TopicInfo is a topic's config and its partitions.
type TopicInfo struct {
	Config     partition.TopicConfig
	Partitions []PartitionInfo
}

// TopicConfigs lists the topics this node has that p may describe, in
// name order (cheap: no partition state).
func (b *Broker) TopicConfigs(ctx context.Context, p Principal) ([]partition.TopicConfig, error) {
	var out []partition.TopicConfig
	for _, c := range b.topics.List() {
		if b.allowed(p, auth.OpDescribe, auth.Topic(c.Name)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// MaxTopicPage is the most topics one page of TopicPage holds, and its
// default size: a page of the longest names is about 0.3 MiB, well within
// a gRPC message's default 4 MiB.
const MaxTopicPage = 1000

// TopicPage is one page of TopicConfigs: at most size topics (0, or more
// than MaxTopicPage: MaxTopicPage) in name order, starting after the
// topic named after ("": the first page), so that topics created or
// deleted between pages shift nothing. next names the page's last topic
// when more follow (the next page's after), else it is "". A negative
// size, or an after that is no topic name, is an invalid argument.
func (b *Broker) TopicPage(ctx context.Context, p Principal, after string, size int) (page []TopicConfig, next string, err error) {
	switch {
	case size < 0:
		return nil, "", kind.Errorf(kind.ErrInvalidArgument, "list topics: page_size must be >= 0 (0: %d), got %d", MaxTopicPage, size)
	case size == 0 || size > MaxTopicPage:
		size = MaxTopicPage
	}
	if after != "" && routing.ValidateTopicName(after) != nil {
		return nil, "", kind.Errorf(kind.ErrInvalidArgument, "list topics: page_token %q is not one this server gave: send the previous answer's next_page_token, or none for the first page", after)
	}
	all, err := b.TopicConfigs(ctx, p)
	if err != nil {
		return nil, "", err
	}
	i, _ := slices.BinarySearchFunc(all, after, func(c TopicConfig, name string) int { return strings.Compare(c.Name, name) })
	if i < len(all) && all[i].Name == after {
		i++
	}
	page = all[i:min(i+size, len(all))]
	if i+size < len(all) {
		next = all[i+size-1].Name
	}
	return page, next, nil
}

// Topics lists the topics p may describe with their partitions' state
// (Kafka's rule: a listing leaves out the others rather than refusing).
func (b *Broker) Topics(ctx context.Context, p Principal) ([]TopicInfo, error) {
	return b.topicList(ctx, p, true)
}

// TopicLayouts is Topics at TopicLayout's cost.
func (b *Broker) TopicLayouts(ctx context.Context, p Principal) ([]TopicInfo, error) {
	return b.topicList(ctx, p, false)
}

func (b *Broker) topicList(ctx context.Context, p Principal, fromLeaders bool) ([]TopicInfo, error) {
	var out []TopicInfo
	cs, _ := b.TopicConfigs(ctx, p)
	for _, c := range cs {
		t, err := b.topic(ctx, c.Name, fromLeaders)
		if err != nil {
			continue // deleted meanwhile
		}
		out = append(out, t)
	}
	return out, nil
}

// Topic is one topic's config and partitions' state. In a cluster it asks
// every partition's leader for its log bounds (a read barrier each, up to
// describeFanOut at once): for a describe, not for a lookup on every
// request.
func (b *Broker) Topic(ctx context.Context, pr Principal, name string) (TopicInfo, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(name)); err != nil {
		return TopicInfo{}, err
	}
	return b.topic(ctx, name, true)
}

// TopicLayout is Topic without asking the partitions' leaders anything:
// the config, each partition's leader, replicas and epoch as Topic gives
// them, and this node's replica's log bounds, which may trail the
// leader's by its last appends (a node without a replica of the topic
// asks a peer for it, as Topic does). It costs no Raft round whatever the
// partition count, for what clients ask often and needs no offsets:
// Kafka's Metadata, a producer's partition count.
func (b *Broker) TopicLayout(ctx context.Context, pr Principal, name string) (TopicInfo, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(name)); err != nil {
		return TopicInfo{}, err
	}
	return b.topic(ctx, name, false)
}

func (b *Broker) topic(ctx context.Context, name string, fromLeaders bool) (TopicInfo, error) {
	c, parts, err := b.topics.Partitions(name)
	if err != nil {
		// In a cluster this node may not have the topic yet.
		return TopicInfo{}, b.topicLookup(ctx, name, err)
	}
	t := TopicInfo{Config: c, Partitions: make([]PartitionInfo, len(parts))}
	for i, p := range parts {
		t.Partitions[i] = PartitionInfo{ID: p.ID, LogStart: p.Log.StartOffset(), HighWatermark: p.Log.HighWatermark(),
			SizeBytes: p.Log.Size(), Segments: int32(len(p.Log.Segments())),
			Leader: SelfID, Replicas: []string{SelfID}, ISR: []string{SelfID}}
	}
	b.plane.describe(ctx, c, parts, t.Partitions, fromLeaders)
	return t, nil
}

const (
	// describeFanOut bounds the partitions one describe asks at once. A
	// lookup mostly waits, for a read barrier's Raft round here (a
	// quorum's fsyncs) or for a peer doing one, and different partitions'
	// rounds are independent: one after the other, 1,000 partitions took
	// most of 10 s; 32 at once divide that wait by up to 32. The bound
	// keeps what one describe adds to the nodes (barriers, calls on a peer
	// link, goroutines) to what a few dozen produce requests add, so that
	// producers starting together do not crowd out traffic; more would
	// gain little on a few cores.
	describeFanOut = 32

	// describeLookupTimeout bounds each partition's lookup (the caller's
	// deadline bounds them all). A partition whose leader is gone or
	// re-electing can hold its lookup long: a deposed leader's barrier
	// until it steps down (a leader lease: 1 s by default) or
	// ReadBarrierTimeout (5 s), a call to a stopped node until the
	// deadline. Without a bound of its own, one such partition holds the
	// whole describe until the caller gives up (a client's default call
	// timeout is 10 s), and a producer learning the partition count fails
	// for it. Past the bound the partition keeps this replica's offsets, as
	// on any lookup error: the answer stays whole and on time, one
	// partition's bounds maybe a little behind. 2 s is past a lease and
	// far past a healthy barrier's round, and a fifth of the client's
	// default.
	describeLookupTimeout = 2 * time.Second
)

// partitionLookup answers a partition's log bounds as its leader knows
// them (Cluster.PartitionLog).
type partitionLookup func(context.Context, *partition.Partition) (offsets.PartitionLog, error)

// leaderBounds sets pis[i]'s log start and high watermark (this replica's)
// to what lookup answers for parts[i], asking up to describeFanOut
// partitions at once, each for at most timeout. A partition whose lookup
// fails, times out or is not started because ctx ended keeps this
// replica's bounds.
func leaderBounds(ctx context.Context, parts []*partition.Partition, pis []PartitionInfo, lookup partitionLookup, timeout time.Duration) {
	fanout.Run(ctx, len(parts), describeFanOut, func(ctx context.Context, i int) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if l, err := lookup(ctx, parts[i]); err == nil {
			pis[i].LogStart, pis[i].HighWatermark = l.StartOffset(), l.HighWatermark()
		}
	})
}

// CreateTopic creates a topic. cfg is partition.DefaultConfig(name) with
// Partitions, Replicas (0: the default) and any settings changed.
func (b *Broker) CreateTopic(ctx context.Context, pr Principal, cfg partition.TopicConfig) (partition.TopicConfig, error) {
	if err := b.authorizeCreate(ctx, pr, cfg.Name); err != nil {
		return cfg, err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return cfg, err
	}
	if err := routing.ValidateTopicName(cfg.Name); err != nil {
		return cfg, kind.Errorf(kind.ErrInvalidArgument, "create topic: %v", err)
	}
	if cfg.Partitions <= 0 {
		return cfg, kind.Errorf(kind.ErrInvalidArgument, "create topic: partitions must be at least 1, got %d", cfg.Partitions)
	}
	// The rest of the checks (cluster.CheckNewTopic) are made where the
	// topic is created: here alone, on the metadata leader in a cluster.
	return b.plane.createTopic(ctx, pr, cfg)
}

// AlterTopic changes a topic's retention and segment settings at runtime.
func (b *Broker) AlterTopic(ctx context.Context, pr Principal, name string, ch partition.ConfigChange) (partition.TopicConfig, error) {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Topic(name)); err != nil {
		return partition.TopicConfig{}, err
	}
	// Lowering retention is how a full disk is freed: it passes until even
	// its few bytes may not fit.
	if err := b.disk.checkRemedy(); err != nil {
		return partition.TopicConfig{}, err
	}
	return b.plane.alterTopic(ctx, pr, name, ch)
}

// AddPartitions grows a topic to count partitions (the new total, more
// than it has: partitions are only added). The new partitions start
// empty; in a cluster their replicas are placed as a new topic's are, and
// it returns once each has a leader that takes a produce (as CreateTopic).
// Records with a key hash over the new count from then on, so a key's new
// records may go to another partition than its old ones (as in Kafka).
// The consumer groups subscribed to the topic rebalance, so the new
// partitions are assigned. Kafka's CreatePartitions calls it too.
func (b *Broker) AddPartitions(ctx context.Context, p Principal, topic string, count int32) (partition.TopicConfig, error) {
	if err := b.Authorize(ctx, p, auth.OpAlter, auth.Topic(topic)); err != nil {
		return partition.TopicConfig{}, err
	}
	if err := b.disk.checkMetadata(); err != nil {
		return partition.TopicConfig{}, err
	}
	if err := routing.ValidateTopicName(topic); err != nil {
		return partition.TopicConfig{}, kind.Errorf(kind.ErrInvalidArgument, "add partitions: %v", err)
	}
	before := b.partitionCount(topic)
	cfg, err := b.plane.addPartitions(ctx, p, topic, count)
	if err == nil || b.partitionCount(topic) > before {
		// Added (also when a new partition has no leader yet: it gets
		// one later): the groups on the topic take the new partitions in.
		b.coord.checkPartitions(topic + " gained partitions")
	}
	return cfg, err
}

// AwaitTopic waits until this node has topic name with at least
// partitions partitions, in its metadata and locally: a front-end that
// forwarded a create or alter to the metadata leader calls it before
// answering, so the topic is usable through this node at once. A single
// node has nothing to wait for.
func (b *Broker) AwaitTopic(ctx context.Context, name string, partitions int32) error {
	return b.plane.awaitTopic(ctx, name, partitions)
}

// DeleteTopic deletes a topic, its data and its committed offsets.
// The consumer groups subscribed to it rebalance (their members stop
// reading it).
func (b *Broker) DeleteTopic(ctx context.Context, pr Principal, name string) error {
	if err := b.Authorize(ctx, pr, auth.OpDelete, auth.Topic(name)); err != nil {
		return err
	}
	if err := b.plane.deleteTopic(ctx, pr, name); err != nil {
		return err
	}
	b.coord.checkPartitions(name + " was deleted")
	return nil
}

// Offset specs for ListOffsets: the log start, the high watermark; a spec
// >= 0 is a time in ms (the first record at or after it).
const (
	Earliest = cluster.Earliest
	Latest   = cluster.Latest
)

// PartitionOffset is an offset ListOffsets resolved, with the log's bounds.
type PartitionOffset struct {
	Partition                       int32
	Offset, LogStart, HighWatermark int64
}

// listOffsetsParallel bounds the partitions ListOffsets resolves at once.
const listOffsetsParallel = 16

// ListOffsets resolves spec on each of a topic's partitions (nil: all).
// In a cluster each is answered by the partition's leader: here, current
// (a read barrier), or asked through Peers. The partitions are resolved
// concurrently, every one even when one fails (eachPartition).
func (b *Broker) ListOffsets(ctx context.Context, pr Principal, topic string, ids []int32, spec int64) ([]PartitionOffset, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Topic(topic)); err != nil {
		return nil, err
	}
	cfg, parts, err := b.topics.Partitions(topic)
	if err != nil {
		return nil, b.topicLookup(ctx, topic, err)
	}
	if len(ids) == 0 {
		for i := range cfg.Partitions {
			ids = append(ids, i)
		}
	}
	named := make([]*partition.Partition, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= cfg.Partitions {
			return nil, partitionRange(topic, cfg.Partitions, id)
		}
		named = append(named, parts[id])
	}
	out := make([]PartitionOffset, len(named))
	err = eachPartition(ctx, len(named), func(ctx context.Context, i int) (err error) {
		out[i], err = b.listOffset(ctx, named[i], spec)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachPartition calls fn(ctx, i) for i in [0, n), listOffsetsParallel at
// a time (fanout.Run), in rounds: a round calls fn for every i not yet
// answered, even after one failed (a partition's call may be what wakes
// its sleeping group, cluster.Replica, so one pass wakes them all), and
// the next round, eachPartitionBackoff later, asks again only for those
// that failed retryably (no leader yet: an election, a group just woken),
// until eachPartitionRetry or half of the time left before ctx's deadline
// has passed (the caller's own retry then still has time: torture's
// clients wait 2-5 s for an answer, and a request held to its deadline
// failed with DeadlineExceeded, which they do not retry). It returns the
// first error in i's order of the last round, or ctx's when it ended
// first.
//
// A request over many partitions so makes progress partition by
// partition: an answer once got is kept, however long the others take.
// A request answered only once every partition had a leader at the same
// time, retried whole by its client, may never be answered: woken
// partitions fall asleep again before the last one is elected (a list
// offsets of 200 partitions was not). Woken groups also stay awake for a
// grace of 30 s (cluster.DefaultWakeGrace says why).
func eachPartition(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	start, backoff, budget := time.Now(), eachPartitionBackoff, eachPartitionRetry
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)/2)
	}
	for {
		fanout.Run(ctx, len(todo), listOffsetsParallel, func(ctx context.Context, k int) { errs[todo[k]] = fn(ctx, todo[k]) })
		if err := ctx.Err(); err != nil {
			return err // some were not asked
		}
		again := todo[:0]
		for _, i := range todo {
			if errs[i] != nil && retryLater(errs[i]) {
				again = append(again, i)
			}
		}
		todo = again
		// A request forwarded by another node gets one round: that node
		// asks again, within its own budget.
		if len(todo) == 0 || cluster.Forwarded(ctx) || time.Since(start)+backoff > budget {
			break
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, eachPartitionMaxBackoff)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// eachPartition's rounds: the first backoff, its cap, and how long a
// request goes on asking (under the client's 10 s call timeout).
const (
	eachPartitionBackoff    = 20 * time.Millisecond
	eachPartitionMaxBackoff = 500 * time.Millisecond
	eachPartitionRetry      = 5 * time.Second
)

// retryLater reports an error of a partition that has no leader right now
// (cluster.Replica's answers for a group electing, just woken, or moving
// its leadership): asked again shortly, it may answer.
func retryLater(err error) bool {
	var nl *cluster.NotLeaderError
	return errors.Is(err, kind.ErrUnavailable) || errors.As(err, &nl)
}

func (b *Broker) listOffset(ctx context.Context, p *partition.Partition, spec int64) (PartitionOffset, error) {
	lp, err := b.plane.leaderOffset(ctx, p, spec)
	if err != nil {
		return PartitionOffset{}, err
	}
	if lp == nil { // this node leads, or runs alone: its own log answers
		local, err := cluster.ResolveOffset(p, spec)
		if err != nil {
			return PartitionOffset{Partition: p.ID, LogStart: local.LogStart, HighWatermark: local.HighWatermark}, err
		}
		lp = &local
	}
	return PartitionOffset{Partition: p.ID, Offset: lp.Offset, LogStart: lp.LogStart, HighWatermark: lp.HighWatermark}, nil
}

// ListOffset resolves spec on one partition. The timestamp is -1: logd
// does not look up the record's time.
func (b *Broker) ListOffset(ctx context.Context, pr Principal, topic string, part int32, spec int64) (offset, timestampMs int64, err error) {
	pos, err := b.ListOffsets(ctx, pr, topic, []int32{part}, spec)
	if err != nil {
		return 0, 0, err
	}
	return pos[0].Offset, -1, nil
}

// The answer of ClusterStatus: package cluster's types, named here so
// that a front-end imports the core alone.
type (
	Status        = cluster.Status
	NodeStatus    = cluster.NodeStatus
	ReplicaStatus = cluster.ReplicaStatus
)

// ClusterStatus reports the nodes and every partition's leader, replicas
// and Raft state (local: this node's replicas only). A node that runs
// alone leads every partition.
func (b *Broker) ClusterStatus(ctx context.Context, pr Principal, local bool) (Status, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return cluster.Status{}, err
	}
	return b.plane.status(ctx, b.LocalNode(), local), nil
}

// Join adds a node to the cluster, or updates the addresses of a member
// that restarted with its data (rejoin; refused for a node removed since).
func (b *Broker) Join(ctx context.Context, pr Principal, n Node, rejoin bool) error {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return err
	}
	return b.plane.join(ctx, n, rejoin)
}

// RemoveNode removes a node from the cluster and returns the partitions
// whose replicas moved ("topic/partition").
func (b *Broker) RemoveNode(ctx context.Context, pr Principal, id string) ([]string, error) {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.plane.removeNode(ctx, id)
}

// Members lists the ids of the nodes the cluster metadata holds (nil on a
// node that runs alone).
func (b *Broker) Members() []string {
	return b.plane.members()
}

// LocalHighWatermark is this node's high watermark of a partition (its
// replica's view: what it knows is committed), -1 without the partition.
func (b *Broker) LocalHighWatermark(topic string, id int32) int64 {
	p, err := b.topics.Partition(topic, id)
	if err != nil {
		return -1
	}
	return p.Log.HighWatermark()
}

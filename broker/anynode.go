package broker

import (
	"context"
	"errors"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// AnyNode is the broker for a front-end whose clients may send any request
// to any node of a cluster, as the REST proxies of Kafka clusters serve
// them (the HTTP API and its console): produce, reads and the consumer
// groups are served where their partition, the metadata or the group
// coordinator is led, over the peer service (peer.go), through Forward;
// every other method is the broker's own. On a node that runs alone it is
// the broker.
type AnyNode struct{ *Broker }

// AnyNode is b serving every request on whichever node leads it.
func (b *Broker) AnyNode() AnyNode { return AnyNode{b} }

// ProduceRecords is Forwarder.ProduceRecords.
func (a AnyNode) ProduceRecords(ctx context.Context, r RecordsRequest) ([]RecordsAppend, error) {
	return a.Forward().ProduceRecords(ctx, r)
}

// Fetch is Forwarder.Fetch.
func (a AnyNode) Fetch(ctx context.Context, r FetchRequest) (FetchResult, error) {
	return a.Forward().Fetch(ctx, r)
}

// CommitOffsets is Forwarder.CommitOffsets.
func (a AnyNode) CommitOffsets(ctx context.Context, pr Principal, group, member string, generation int32, cs []offsets.Committed) error {
	return a.Forward().CommitOffsets(ctx, pr, group, member, generation, cs)
}

// FetchOffsets is Forwarder.FetchOffsets.
func (a AnyNode) FetchOffsets(ctx context.Context, pr Principal, group string, topics []string) ([]offsets.Committed, error) {
	return a.Forward().FetchOffsets(ctx, pr, group, topics)
}

// DescribeGroup is Forwarder.DescribeGroup.
func (a AnyNode) DescribeGroup(ctx context.Context, pr Principal, group string) (groups.GroupDescription, error) {
	return a.Forward().DescribeGroup(ctx, pr, group)
}

// ListMemberGroups is Forwarder.ListMemberGroups.
func (a AnyNode) ListMemberGroups(ctx context.Context, pr Principal) ([]GroupListing, error) {
	return a.Forward().ListMemberGroups(ctx, pr)
}

// The requests of the operations this file's methods pass on.
type (
	produceReq struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Batch     []byte `json:"batch"`
		Acks      Acks   `json:"acks"`
		// TransactionalID: see ProduceRequest.
		TransactionalID string `json:"transactional_id,omitempty"`
		AddToTxn        bool   `json:"add_to_txn,omitempty"`
		// DeadLetter marks a share partition's dead-letter append
		// (share_dlq.go), which the node asked makes without authorizing.
		DeadLetter bool `json:"dead_letter,omitempty"`
	}
	groupReq struct {
		Group string `json:"group,omitempty"`
	}
)

// Produce is Broker.Produce, on the partition's leader: a batch this node
// refused untouched for not leading the partition is appended there, as
// it is (an idempotent producer's batch is deduplicated there).
func (f Forwarder) Produce(ctx context.Context, r ProduceRequest) (ProduceResult, error) {
	res, err := f.b.Produce(ctx, r)
	if addr, ok := passOn(ctx, err); ok {
		res = ProduceResult{}
		err = f.b.peerCall(ctx, addr, opProduce, r.Principal,
			produceReq{Topic: r.Topic, Partition: r.Partition, Batch: r.Batch, Acks: r.Acks, TransactionalID: r.TransactionalID, AddToTxn: r.AddToTxn}, &res)
	}
	return res, err
}

// ProduceRecords is Broker.ProduceRecords with each partition's batch
// appended on that partition's leader (Produce): one request of records
// spread over partitions that different nodes lead is answered once,
// each partition with its offsets or its own error.
func (f Forwarder) ProduceRecords(ctx context.Context, r RecordsRequest) ([]RecordsAppend, error) {
	return f.b.produceRecords(ctx, r, f.Produce)
}

// DescribeGroup is Broker.DescribeGroup, on the node that coordinates the
// groups (the metadata leader).
func (f Forwarder) DescribeGroup(ctx context.Context, pr Principal, group string) (groups.GroupDescription, error) {
	d, err := f.b.DescribeGroup(ctx, pr, group)
	if addr, ok := coordinatorOf(ctx, err); ok {
		d = groups.GroupDescription{}
		err = f.b.peerCall(ctx, addr, opDescribeGroup, pr, groupReq{Group: group}, &d)
	}
	return d, err
}

// ListMemberGroups is Broker.ListMemberGroups, on the node that
// coordinates the groups.
func (f Forwarder) ListMemberGroups(ctx context.Context, pr Principal) ([]GroupListing, error) {
	gs, err := f.b.ListMemberGroups(ctx, pr)
	if addr, ok := coordinatorOf(ctx, err); ok {
		gs = nil
		err = f.b.peerCall(ctx, addr, opListMemberGroups, pr, groupReq{}, &gs)
	}
	return gs, err
}

// coordinatorOf is passOn for the group coordinator: the Raft address of
// the node that coordinates the groups, when err is this node's
// *NotCoordinatorError naming it, and the request is not one another node
// made of this one.
func coordinatorOf(ctx context.Context, err error) (string, bool) {
	var nc *NotCoordinatorError
	if !errors.As(err, &nc) || nc.Leader.RaftAddr == "" || cluster.Forwarded(ctx) {
		return passOn(ctx, err)
	}
	return nc.Leader.RaftAddr, true
}

// coordinatorAnswer is err as a peer call's answer: a node asked for the
// groups that does not coordinate them (any more) answers "not leader",
// untouched, naming the node that does, which the caller follows.
func coordinatorAnswer(err error) error {
	var nc *NotCoordinatorError
	if errors.As(err, &nc) {
		return &NotLeaderError{What: "the consumer group coordinator", Leader: nc.Leader, Untouched: true}
	}
	return err
}

package broker

import (
	"context"
	"slices"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
)

// PartitionMove is a partition's new replicas (node ids, the preferred
// leader first) in MovePartitions, or, in PartitionMoves, a partition
// whose replicas are changing: Replicas its target set and Voters the
// replicas its Raft group has now.
type PartitionMove struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []string `json:"replicas"`
	Voters    []string `json:"voters,omitempty"`
}

// opMovePartition is a move of one partition, made of the metadata
// leader (peer.go).
const opMovePartition = "partition.move"

// MovePartitions gives each partition named its new replicas, as Kafka's
// AlterPartitionReassignments: alter on the cluster. The answer has one
// error per move: an unknown topic or partition, or a set that is not as
// many distinct members as the topic's replication factor
// (kind.ErrInvalidArgument). The replicas move in the background, by the
// cluster's own machinery (cluster.MovePartition); PartitionMoves lists
// those under way. A node that runs alone keeps every partition: moving
// one anywhere but to itself is kind.ErrInvalidArgument.
func (b *Broker) MovePartitions(ctx context.Context, pr Principal, moves []PartitionMove) ([]error, error) {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return nil, err
	}
	errs := make([]error, len(moves))
	for i, m := range moves {
		err := b.plane.movePartition(ctx, m)
		if addr, ok := passOn(ctx, err); ok {
			err = b.peerCall(ctx, addr, opMovePartition, pr, m, nil)
		}
		errs[i] = err
	}
	return errs, nil
}

// PartitionMoves lists the partitions whose replicas are changing
// (ListPartitionReassignments): describe on the cluster. In a cluster it
// is this node's view: the partitions it keeps a replica of whose Raft
// voters are not yet their placement's set (cluster.Moves).
func (b *Broker) PartitionMoves(ctx context.Context, pr Principal) ([]PartitionMove, error) {
	if err := b.Authorize(ctx, pr, auth.OpDescribe, auth.Cluster()); err != nil {
		return nil, err
	}
	return b.plane.moves(), nil
}

// handleMovePeers serves the moves other nodes pass on to the metadata
// leader, for the principal they name.
func (b *Broker) handleMovePeers() {
	handle(b, opMovePartition, func(ctx context.Context, pr Principal, m PartitionMove) (any, error) {
		if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
			return nil, err
		}
		return none{}, b.plane.movePartition(ctx, m)
	})
}

func (l *localPlane) movePartition(_ context.Context, m PartitionMove) error {
	if _, err := l.topics.Partition(m.Topic, m.Partition); err != nil {
		return err
	}
	if !slices.Equal(m.Replicas, []string{SelfID}) {
		return kind.Errorf(kind.ErrInvalidArgument, "move %s/%d to %v: this node runs alone and keeps every partition", m.Topic, m.Partition, m.Replicas)
	}
	return nil
}

func (l *localPlane) moves() []PartitionMove { return nil }

func (r *raftPlane) movePartition(ctx context.Context, m PartitionMove) error {
	return r.cl.MovePartition(ctx, m.Topic, m.Partition, m.Replicas)
}

func (r *raftPlane) moves() []PartitionMove {
	var out []PartitionMove
	for _, mv := range r.cl.Moves() {
		out = append(out, PartitionMove{Topic: mv.Topic, Partition: mv.Partition, Replicas: mv.Target, Voters: mv.Voters})
	}
	return out
}

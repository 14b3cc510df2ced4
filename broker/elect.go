package broker

import (
	"context"
	"fmt"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
)

// ErrElectionNotNeeded answers an election of a partition whose leader is
// the one it would elect (Kafka's ELECTION_NOT_NEEDED). It is of the kind
// kind.ErrFailedPrecondition.
var ErrElectionNotNeeded = fmt.Errorf("the partition's leader is the one an election would choose: %w", kind.ErrFailedPrecondition)

// ElectionPartition names a partition to elect a leader of.
type ElectionPartition struct {
	Topic     string
	Partition int32
}

// opElectPreferred is ElectLeaders' preferred election of one partition,
// made of the node that leads it (peer.go).
const opElectPreferred = "partition.elect_preferred"

// ElectLeaders elects the leaders of parts, as Kafka's ElectLeaders: alter
// on the cluster. preferred moves each partition's leadership to its
// preferred replica (the first of its replicas; the cluster's spread loop
// does the same within 10 s): ErrElectionNotNeeded when it leads already,
// an error of the kind kind.ErrUnavailable when it cannot take over.
// Otherwise (Kafka's unclean election) a partition with a leader is
// ErrElectionNotNeeded and one without an error of the kind
// kind.ErrNoLeader: Raft elects a leader only among the replicas with
// every committed record, so there is no unclean election to make. The
// answer has one error per part; a node that does not lead a partition
// asks the one that does.
func (b *Broker) ElectLeaders(ctx context.Context, pr Principal, preferred bool, parts []ElectionPartition) ([]error, error) {
	if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
		return nil, err
	}
	errs := make([]error, len(parts))
	for i, ep := range parts {
		errs[i] = b.elect(ctx, pr, preferred, ep)
	}
	return errs, nil
}

func (b *Broker) elect(ctx context.Context, pr Principal, preferred bool, ep ElectionPartition) error {
	if !preferred {
		t, err := b.topic(ctx, ep.Topic, false)
		if err != nil {
			return err
		}
		if ep.Partition < 0 || int(ep.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: %s/%d", ErrUnknownPartition, ep.Topic, ep.Partition)
		}
		if t.Partitions[ep.Partition].Leader == "" {
			return kind.Errorf(kind.ErrNoLeader, "partition %s/%d has no leader: an election is under way among its replicas", ep.Topic, ep.Partition)
		}
		return ErrElectionNotNeeded
	}
	err := b.electPreferred(ctx, ep)
	if addr, ok := passOn(ctx, err); ok {
		err = b.peerCall(ctx, addr, opElectPreferred, pr, recordsReq{Topic: ep.Topic, Partition: ep.Partition}, nil)
	}
	return err
}

// electPreferred is a preferred election of one partition on this node.
func (b *Broker) electPreferred(ctx context.Context, ep ElectionPartition) error {
	p, err := b.topics.Partition(ep.Topic, ep.Partition)
	if err != nil {
		return b.topicLookup(ctx, ep.Topic, err)
	}
	notNeeded, err := b.plane.preferLeader(ctx, p)
	if notNeeded {
		return ErrElectionNotNeeded
	}
	return err
}

// handleElectPeers serves the preferred elections other nodes pass on,
// for the principal they name.
func (b *Broker) handleElectPeers() {
	handle(b, opElectPreferred, func(ctx context.Context, pr Principal, r recordsReq) (any, error) {
		if err := b.Authorize(ctx, pr, auth.OpAlter, auth.Cluster()); err != nil {
			return nil, err
		}
		return none{}, b.electPreferred(ctx, ElectionPartition{Topic: r.Topic, Partition: r.Partition})
	})
}

// preferLeader: a node that runs alone leads every partition, as its only
// replica.
func (l *localPlane) preferLeader(context.Context, *partition.Partition) (bool, error) {
	return true, nil
}

func (r *raftPlane) preferLeader(ctx context.Context, p *partition.Partition) (bool, error) {
	return r.cl.PreferLeader(ctx, p)
}

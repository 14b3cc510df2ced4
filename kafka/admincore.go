package kafka

import (
	"context"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/offsets"
)

// AdminCore is what the cluster-admin APIs need of the core beyond Core
// (OffsetDelete, ElectLeaders, the partition reassignments and the client
// quotas): package broker's *Broker has it. A core without it answers
// those APIs with an error (the in-memory fake of the unit tests).
type AdminCore interface {
	// DeleteOffsets deletes a group's committed offsets of the partitions
	// named, one error per partition (OffsetDelete).
	DeleteOffsets(ctx context.Context, p Principal, group string, parts []offsets.Committed) ([]error, error)
	// The client quotas (DescribeClientQuotas, AlterClientQuotas) and
	// their enforcement: QuotaThrottle counts a produce's or a fetch's
	// bytes and answers the client's throttle time.
	ClientQuotas(ctx context.Context, p Principal, filters []broker.QuotaFilter, strict bool) ([]broker.ClientQuota, error)
	AlterClientQuota(ctx context.Context, p Principal, e broker.QuotaEntity, set map[string]float64, remove []string, validateOnly bool) error
	QuotaThrottle(p Principal, clientID string, produce bool, n int) time.Duration
	// ElectLeaders elects the partitions' leaders (preferred, or Kafka's
	// unclean election), one error per partition.
	ElectLeaders(ctx context.Context, p Principal, preferred bool, parts []broker.ElectionPartition) ([]error, error)
	// MovePartitions and PartitionMoves: the partition reassignments.
	MovePartitions(ctx context.Context, p Principal, moves []broker.PartitionMove) ([]error, error)
	PartitionMoves(ctx context.Context, p Principal) ([]broker.PartitionMove, error)
}

var _ AdminCore = (*broker.Broker)(nil)

// adminCore is s's AdminCore, or nil.
func (s *Server) adminCore() AdminCore {
	ac, _ := s.core.(AdminCore)
	return ac
}

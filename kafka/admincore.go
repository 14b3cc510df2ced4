package kafka

import (
	"context"

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
}

var _ AdminCore = (*broker.Broker)(nil)

// adminCore is s's AdminCore, or nil.
func (s *Server) adminCore() AdminCore {
	ac, _ := s.core.(AdminCore)
	return ac
}

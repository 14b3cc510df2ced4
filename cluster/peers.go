package cluster

import (
	"context"

	"github.com/logd/logd/partition"
)

// Peers is how a node asks other nodes (by their API address) for what the
// control plane needs of them. The gRPC front-end implements it; every call
// is marked forwarded (see WithForwarded), so the node asked answers or
// fails and never passes it on again. Membership (join, rejoin) is not
// here: it runs on the peer channel of the Raft port (peerservice.go).
type Peers interface {
	// Status is the node at addr's view of its own replicas.
	Status(ctx context.Context, addr string) (Status, error)
	// ListOffset asks the leader of a partition at addr for an offset
	// (spec: Earliest, Latest or a time in ms) and its log's bounds.
	ListOffset(ctx context.Context, addr, topic string, partition int32, spec int64) (PartitionOffset, error)

	// The topic changes only the metadata leader makes, asked of the
	// leader at addr for a request this node could not do (it does not
	// lead the metadata). principal is the request's ("" anonymous): the
	// node at addr authorizes it, and honours the claim only from a node
	// allowed to speak for others (alter on the cluster; see
	// broker.ForwardedIdentity). Errors are of the kinds this package's
	// callers map (partition.ErrTopicExists, ErrTopicNotFound,
	// ErrInvalidConfig, auth.ErrDenied, kind.ErrUnavailable, ...).
	CreateTopic(ctx context.Context, addr, principal string, cfg partition.TopicConfig) (partition.TopicConfig, error)
	AlterTopic(ctx context.Context, addr, principal, topic string, ch partition.ConfigChange) (partition.TopicConfig, error)
	AddPartitions(ctx context.Context, addr, principal, topic string, count int32) (partition.TopicConfig, error)
	DeleteTopic(ctx context.Context, addr, principal, topic string) error
}

// Offset specs: earliest, latest; a spec >= 0 is a time in ms.
const (
	Earliest int64 = -2
	Latest   int64 = -1
)

// PartitionOffset is an offset a partition's leader resolved, with the
// log's bounds.
type PartitionOffset struct {
	Offset, LogStart, HighWatermark int64
}

type forwardedKey struct{}

// WithForwarded marks ctx as a request another node forwarded here: it is
// answered here or fails, never forwarded again.
func WithForwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

// Forwarded reports whether ctx is a request another node forwarded.
func Forwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

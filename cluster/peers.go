package cluster

import (
	"context"
	"encoding/json"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
)

// The peer calls this package answers itself: a node's view of its own
// replicas (status), and an offset of a partition this node leads (list
// offset). Both are asked by a node of this cluster for what its own
// request needs, which it authorized.
const (
	peerOpStatus     = "status"
	peerOpListOffset = "list_offset"
)

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

// peerStatus is the node at raftAddr's view of its own replicas.
func (c *Cluster) peerStatus(ctx context.Context, raftAddr string) (Status, error) {
	var st Status
	err := c.call(ctx, raftAddr, peerRequest{Op: peerOpStatus}, &st)
	return st, err
}

type listOffsetRequest struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Spec      int64  `json:"spec"`
}

// peerListOffset asks the leader of a partition, at raftAddr, for an
// offset (spec: Earliest, Latest or a time in ms) and its log's bounds.
func (c *Cluster) peerListOffset(ctx context.Context, raftAddr, topic string, part int32, spec int64) (PartitionOffset, error) {
	var po PartitionOffset
	err := c.Call(ctx, raftAddr, peerOpListOffset, "", listOffsetRequest{Topic: topic, Partition: part, Spec: spec}, &po)
	return po, err
}

// answerListOffset resolves a list offset on this node, which must lead
// the partition (Forwarded(ctx): a "not leader" answer names the leader,
// whom the caller asks).
func (c *Cluster) answerListOffset(ctx context.Context, body json.RawMessage) (any, error) {
	var req listOffsetRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, kind.Errorf(kind.ErrInvalidArgument, "list offset: %v", err)
	}
	p, err := c.o.Topics.Partition(req.Topic, req.Partition)
	if err != nil {
		return nil, c.TopicLookup(ctx, req.Topic, err)
	}
	po, err := c.ListOffset(ctx, p, req.Spec)
	switch {
	case err != nil:
		return nil, err
	case po != nil:
		return *po, nil
	}
	return ResolveOffset(p, req.Spec)
}

// ResolveOffset resolves spec on p's local log.
func ResolveOffset(p *partition.Partition, spec int64) (PartitionOffset, error) {
	l := p.Log
	po := PartitionOffset{LogStart: l.StartOffset(), HighWatermark: l.HighWatermark()}
	switch {
	case spec == Earliest:
		po.Offset = po.LogStart
	case spec == Latest:
		po.Offset = po.HighWatermark
	case spec >= 0:
		off, err := l.OffsetForTime(spec)
		if err != nil {
			return po, err
		}
		po.Offset = off
	default:
		return po, kind.Errorf(kind.ErrInvalidArgument, "list offsets: unknown spec %d (earliest -2, latest -1, or a time in ms)", spec)
	}
	return po, nil
}

type forwardedKey struct{}

// WithForwarded marks ctx as a call another node made of this one over
// the peer service: it is answered here or fails, never passed on to yet
// another node (the caller follows a "not leader" answer itself).
func WithForwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

// Forwarded reports whether ctx is a call another node made of this one.
func Forwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/partition"
)

// PreferLeader moves p's leadership to its preferred replica (the first of
// its placement set), as the spread loop does every 10 s, at once:
// notNeeded when that replica leads p already; *NotLeaderError (Untouched)
// naming the leader when another node leads p, which must do it; an error
// of the kind kind.ErrUnavailable when the transfer fails (the preferred
// replica is down or behind).
func (c *Cluster) PreferLeader(ctx context.Context, p *partition.Partition) (notNeeded bool, err error) {
	_, set, ok := c.localReplica(p)
	if !ok || len(set) == 0 {
		return false, c.TopicLookup(ctx, p.Topic, fmt.Errorf("%w: %q", partition.ErrTopicNotFound, p.Topic))
	}
	want := set[0]
	r, err := c.Replica(ctx, p)
	if err != nil {
		var nl *NotLeaderError
		if errors.As(err, &nl) && nl.Leader.ID == want {
			return true, nil
		}
		return false, err
	}
	if want == c.self {
		return true, nil
	}
	addr := c.State().Nodes[want].RaftAddr
	if addr == "" {
		return false, kind.Errorf(kind.ErrUnavailable, "partition %s: its preferred leader %q is not a member with an address", p.Name(), want)
	}
	if err := r.TransferLeadership(raft.ServerID(want), raft.ServerAddress(addr)); err != nil {
		return false, kind.Errorf(kind.ErrUnavailable, "partition %s: moving its leadership to %q: %v", p.Name(), want, err)
	}
	return false, nil
}

package cluster

import (
	"context"

	"github.com/logd/logd/replication/meta"
)

// RecordGroupState records a consumer group's membership in generation
// gen (enc: package groups' encoding; empty removes the record) through
// the metadata group (meta.OpGroupState), on the metadata leader.
func (c *Cluster) RecordGroupState(ctx context.Context, group string, gen int32, enc []byte) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpGroupState, Group: group, Generation: gen, Value: enc}))
}

// GroupStates is every consumer group's recorded membership as this node
// applied it; on the metadata leader, current after MetaLinearizable.
func (c *Cluster) GroupStates() map[string]meta.GroupState { return c.meta.FSM.GroupStates() }

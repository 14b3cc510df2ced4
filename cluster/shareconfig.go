package cluster

import (
	"context"

	"github.com/logd/logd/replication/meta"
)

// RecordShareGroupConfig records a share group's configuration (enc:
// package broker's encoding; empty: the defaults) through the metadata
// group (meta.OpShareGroupConfig), on the metadata leader.
func (c *Cluster) RecordShareGroupConfig(ctx context.Context, group string, enc []byte) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpShareGroupConfig, Name: group, Value: enc}))
}

// ShareGroupConfig is group's configuration as this node applied it, and
// the count of changes it is of (meta.FSM.ShareGroupConfigGen).
func (c *Cluster) ShareGroupConfig(group string) (enc []byte, gen uint64) {
	gen = c.meta.FSM.ShareGroupConfigGen()
	return c.meta.FSM.ShareGroupConfig(group), gen
}

// ShareGroupConfigGen is the count of the share groups' configuration
// changes this node applied.
func (c *Cluster) ShareGroupConfigGen() uint64 { return c.meta.FSM.ShareGroupConfigGen() }

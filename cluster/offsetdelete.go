package cluster

import (
	"context"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/replication/meta"
)

// DeleteOffsets deletes a group's committed offsets of the partitions cs
// names (their offsets ignored), on the metadata leader.
func (c *Cluster) DeleteOffsets(ctx context.Context, group string, cs []offsets.Committed) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpDeleteOffsets, Group: group, Offsets: cs}))
}

package cluster

import (
	"context"

	"github.com/logd/logd/replication/meta"
)

// Users and ACLs in the cluster metadata (meta.AuthState). Writes run on
// the metadata leader (others answer *NotLeaderError, Untouched); reads
// are every node's applied state, so each node authenticates and
// authorizes locally.

// ApplyAuth applies an auth command (meta.OpPutUser, OpDeleteUser,
// OpAddACLs, OpRemoveACLs) on the metadata leader. check, when set, runs
// on the current state after the leader's barrier and before the command
// is proposed: its error is returned as is (a user that does not exist,
// an ACL filter that matches nothing); it may also fill in the command
// (the ACLs a filter matched).
func (c *Cluster) ApplyAuth(ctx context.Context, cmd *meta.Command, check func(f *meta.FSM) error) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	if check != nil {
		if err := check(c.meta.FSM); err != nil {
			return err
		}
	}
	return c.RaftError(c.meta.Apply(ctx, *cmd))
}

// Auth is this node's applied users and ACLs, for reading.
func (c *Cluster) Auth() *meta.FSM { return c.meta.FSM }

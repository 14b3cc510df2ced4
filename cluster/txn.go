package cluster

import (
	"context"

	"github.com/logd/logd/replication/meta"
)

// RecordTxnState records a transactional id's state (enc: package txn's
// encoding) through the metadata group (meta.OpTxnState), on the
// metadata leader. term is the metadata term of the coordinator that
// wrote it: the record is applied only if proposed in that term (0: in
// any).
func (c *Cluster) RecordTxnState(ctx context.Context, id string, enc []byte, term uint64) error {
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.meta.Apply(ctx, meta.Command{Op: meta.OpTxnState, Name: id, Value: enc, Term: term}))
}

// MetaTerm is the metadata group's Raft term on this node: state a
// leader keeps in memory from the records (the transaction coordinator)
// is its term's only.
func (c *Cluster) MetaTerm() uint64 { return c.meta.Term() }

// TxnStates is every transactional id's recorded state as this node
// applied it; on the metadata leader, current after MetaLinearizable.
func (c *Cluster) TxnStates() map[string][]byte { return c.meta.FSM.TxnStates() }

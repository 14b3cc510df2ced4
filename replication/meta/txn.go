package meta

import (
	"fmt"
	"maps"

	"github.com/hashicorp/raft"
)

// OpTxnState records a transactional id's state (Name: the id; Value:
// package txn's encoding of its record, kept opaque here) for the
// transaction coordinator, which runs on the metadata leader; an empty
// Value removes it. A new leader's coordinator takes every record over
// and finishes what they left in flight (docs/transactions.md).
const OpTxnState Op = "txn_state"

// applyTxnTerm refuses an OpTxnState command whose Term is not the term
// of its log entry. The coordinator keeps the records in memory, built
// in one term of its node's lead; a step it began then and writes after
// the node lost the lead and won it back (the entry is of the new term)
// would overwrite what another leader's coordinator wrote in between
// with a record made from what it no longer holds.
func applyTxnTerm(c Command, l *raft.Log) error {
	if c.Op != OpTxnState || c.Term == 0 || c.Term == l.Term {
		return nil
	}
	return fmt.Errorf("meta: index %d: transactional id %q: a record of the coordinator of term %d, proposed in term %d: not applied", l.Index, c.Name, c.Term, l.Term)
}

// applyTxnState applies an OpTxnState command. Runs with f.mu held.
func (f *FSM) applyTxnState(c Command) {
	if len(c.Value) == 0 {
		delete(f.txns, c.Name)
		return
	}
	if f.txns == nil {
		f.txns = map[string][]byte{}
	}
	f.txns[c.Name] = c.Value
}

// TxnStates returns every transactional id's recorded state, by id. The
// values are shared, not copied: the caller must not change them.
func (f *FSM) TxnStates() map[string][]byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.txns)
}

package meta

import "maps"

// OpTxnState records a transactional id's state (Name: the id; Value:
// package txn's encoding of its record, kept opaque here) for the
// transaction coordinator, which runs on the metadata leader; an empty
// Value removes it. A new leader's coordinator takes every record over
// and finishes what they left in flight (docs/transactions.md).
const OpTxnState Op = "txn_state"

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

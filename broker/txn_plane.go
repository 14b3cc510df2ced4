package broker

import (
	"bytes"
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// The transaction coordinator's records (txn.go) in the control plane:
// on a node that runs alone, Pebble keys "txn/<transactional id>"
// (written with sync); in a cluster, meta.OpTxnState commands of the
// metadata group.

const txnKeyPrefix = "txn/"

// putTxn: no other node can lead, so the term (0) is always current.
func (l *localPlane) putTxn(_ context.Context, id string, enc []byte, _ uint64) error {
	return l.db.Set([]byte(txnKeyPrefix+id), enc, pebble.Sync)
}

func (l *localPlane) txnRecords(context.Context) (map[string][]byte, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte(txnKeyPrefix), UpperBound: prefixEnd(txnKeyPrefix)})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key()[len(txnKeyPrefix):])] = bytes.Clone(it.Value())
	}
	return out, errors.Join(it.Error(), it.Close())
}

func (r *raftPlane) putTxn(ctx context.Context, id string, enc []byte, term uint64) error {
	return r.cl.RecordTxnState(ctx, id, enc, term)
}

// txnRecords: the records as the metadata holds them once what this node
// applied is current (a read barrier on the metadata leader).
func (r *raftPlane) txnRecords(ctx context.Context) (map[string][]byte, error) {
	if err := r.currentMeta(ctx); err != nil {
		return nil, err
	}
	return r.cl.TxnStates(), nil
}

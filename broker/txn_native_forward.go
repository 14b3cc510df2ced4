package broker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/txn"
)

// TxnCode is a TxnError's code.
type TxnCode = txn.Code

// The transaction calls of logd's own clients (the gRPC Transactions
// service) through Forward: each runs the broker's method of the same
// name here (the one the Kafka front-end calls, which authorizes it) and,
// when this node does not coordinate transactions, on the node that does
// (the metadata leader) over the peer service, for the same principal.
// A Kafka client finds that node itself (FindCoordinator); a native
// client may ask any node.

// The operations; their names are part of the peer protocol.
const (
	opTxnInit          = "txn.init"
	opTxnAddPartitions = "txn.add_partitions"
	opTxnAddOffsets    = "txn.add_offsets"
	opTxnCommitOffsets = "txn.commit_offsets"
	opTxnEnd           = "txn.end"
)

// txnReq is a transaction call made of another node.
type txnReq struct {
	ID         string         `json:"id"`
	Producer   int64          `json:"producer"`
	Epoch      int16          `json:"epoch"`
	TimeoutMs  int64          `json:"timeout_ms,omitempty"`
	Partitions []TxnPartition `json:"partitions,omitempty"`
	Group      string         `json:"group,omitempty"`
	Member     string         `json:"member,omitempty"`
	Generation int32          `json:"generation"`
	Offsets    []TxnOffset    `json:"offsets,omitempty"`
	Commit     bool           `json:"commit,omitempty"`
}

// txnInitAnswer is opTxnInit's answer.
type txnInitAnswer struct {
	Producer int64 `json:"producer"`
	Epoch    int16 `json:"epoch"`
}

// kindTxn names a TxnError in a peer call's answer (its Code in the
// detail "code").
const kindTxn = "txn"

// handleTxnNativePeers registers the operations.
func (b *Broker) handleTxnNativePeers() {
	handle(b, opTxnInit, func(ctx context.Context, pr Principal, r txnReq) (any, error) {
		pid, epoch, err := b.InitTransactions(ctx, pr, r.ID, time.Duration(r.TimeoutMs)*time.Millisecond, r.Producer, r.Epoch)
		return txnInitAnswer{Producer: pid, Epoch: epoch}, txnPeerAnswer(err)
	})
	handle(b, opTxnAddPartitions, func(ctx context.Context, pr Principal, r txnReq) (any, error) {
		return none{}, txnPeerAnswer(firstRefused(b.AddPartitionsToTxn(ctx, pr, r.ID, r.Producer, r.Epoch, r.Partitions)))
	})
	handle(b, opTxnAddOffsets, func(ctx context.Context, pr Principal, r txnReq) (any, error) {
		return none{}, txnPeerAnswer(b.AddOffsetsToTxn(ctx, pr, r.ID, r.Producer, r.Epoch, r.Group))
	})
	handle(b, opTxnCommitOffsets, func(ctx context.Context, pr Principal, r txnReq) (any, error) {
		return none{}, txnPeerAnswer(b.TxnCommitOffsets(ctx, pr, r.ID, r.Producer, r.Epoch, r.Group, r.Member, r.Generation, r.Offsets))
	})
	handle(b, opTxnEnd, func(ctx context.Context, pr Principal, r txnReq) (any, error) {
		return none{}, txnPeerAnswer(b.EndTxn(ctx, pr, r.ID, r.Producer, r.Epoch, r.Commit))
	})
}

// txnPeerAnswer is err as a peer call's answer: a TxnError by its code;
// "not the coordinator" as a "not leader" answer naming the node that
// is, which the caller follows (cluster.Call).
func txnPeerAnswer(err error) error {
	var te *TxnError
	if errors.As(err, &te) {
		return &cluster.PeerError{Kind: kindTxn, Message: te.Msg, Detail: map[string]string{"code": strconv.Itoa(int(te.Code))}}
	}
	return coordinatorAnswer(err)
}

// firstRefused is AddPartitionsToTxn's answer as one error: err, or the
// first partition refused (then none was added), named.
func firstRefused(errs []error, err error) error {
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// fromTxnPeer reads a peer call's error back: a TxnError by its code,
// the others as fromPeerError does.
func fromTxnPeer(err error) error {
	var pe *cluster.PeerError
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Kind == kindTxn {
		code, _ := strconv.Atoi(pe.Detail["code"])
		return &TxnError{Code: TxnCode(code), Msg: pe.Message}
	}
	return fromPeerError(pe)
}

// txnPassOn is the Raft address of the node to make a transaction call
// of: the one that coordinates transactions, when this one answered that
// it does not (or, untouched, that another node leads the metadata), and
// the call is not one another node made of this one.
func txnPassOn(ctx context.Context, err error) (string, bool) {
	if addr, ok := passOn(ctx, err); ok {
		return addr, true
	}
	var nc *NotCoordinatorError
	if errors.As(err, &nc) && nc.Leader.RaftAddr != "" && !cluster.Forwarded(ctx) {
		return nc.Leader.RaftAddr, true
	}
	return "", false
}

// InitTransactions is Broker.InitTransactions, on the coordinator.
func (f Forwarder) InitTransactions(ctx context.Context, pr Principal, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, error) {
	pid2, epoch2, err := f.b.InitTransactions(ctx, pr, id, timeout, pid, epoch)
	if addr, ok := txnPassOn(ctx, err); ok {
		var a txnInitAnswer
		err = fromTxnPeer(f.b.peerCall(ctx, addr, opTxnInit, pr, txnReq{ID: id, Producer: pid, Epoch: epoch, TimeoutMs: timeout.Milliseconds()}, &a))
		pid2, epoch2 = a.Producer, a.Epoch
	}
	return pid2, epoch2, err
}

// AddPartitionsToTxn is Broker.AddPartitionsToTxn, on the coordinator,
// its answer as one error: the call's, or the first partition refused
// (then none was added).
func (f Forwarder) AddPartitionsToTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, parts []TxnPartition) error {
	err := firstRefused(f.b.AddPartitionsToTxn(ctx, pr, id, pid, epoch, parts))
	if addr, ok := txnPassOn(ctx, err); ok {
		err = fromTxnPeer(f.b.peerCall(ctx, addr, opTxnAddPartitions, pr, txnReq{ID: id, Producer: pid, Epoch: epoch, Partitions: parts}, nil))
	}
	return err
}

// AddOffsetsToTxn is Broker.AddOffsetsToTxn, on the coordinator.
func (f Forwarder) AddOffsetsToTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group string) error {
	err := f.b.AddOffsetsToTxn(ctx, pr, id, pid, epoch, group)
	if addr, ok := txnPassOn(ctx, err); ok {
		err = fromTxnPeer(f.b.peerCall(ctx, addr, opTxnAddOffsets, pr, txnReq{ID: id, Producer: pid, Epoch: epoch, Group: group}, nil))
	}
	return err
}

// TxnCommitOffsets is Broker.TxnCommitOffsets, on the coordinator.
func (f Forwarder) TxnCommitOffsets(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []TxnOffset) error {
	err := f.b.TxnCommitOffsets(ctx, pr, id, pid, epoch, group, member, generation, offs)
	if addr, ok := txnPassOn(ctx, err); ok {
		r := txnReq{ID: id, Producer: pid, Epoch: epoch, Group: group, Member: member, Generation: generation, Offsets: offs}
		err = fromTxnPeer(f.b.peerCall(ctx, addr, opTxnCommitOffsets, pr, r, nil))
	}
	return err
}

// EndTxn is Broker.EndTxn, on the coordinator.
func (f Forwarder) EndTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, commit bool) error {
	err := f.b.EndTxn(ctx, pr, id, pid, epoch, commit)
	if addr, ok := txnPassOn(ctx, err); ok {
		err = fromTxnPeer(f.b.peerCall(ctx, addr, opTxnEnd, pr, txnReq{ID: id, Producer: pid, Epoch: epoch, Commit: commit}, nil))
	}
	return err
}

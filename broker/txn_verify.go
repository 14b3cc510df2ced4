package broker

import (
	"context"
	"errors"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/txn"
)

// A transactional producer's first batch in a partition's transaction is
// verified with the coordinator before it is stored (KIP-890's
// verification; Kafka's produce request names the transactional id): the
// partition must be in the id's ongoing transaction at the producer's
// epoch. The answer is the transaction's number, which the partition
// checks against the markers it has (partition.StartTxnAppendVia): a
// batch of a transaction whose marker is already there or on its way is
// refused. Without it a late batch of a finished transaction would open
// one that no marker ends, holding the partition's last stable offset
// until the coordinator's timeout, which knows nothing of it.

// A producer of transaction version 2 (KIP-890 part 2: Kafka's produce
// v12 and later) sends no AddPartitionsToTxn: its first batch in a
// partition adds the partition to its transaction instead of only
// verifying it (ProduceRequest.AddToTxn, txn.Coordinator.AddPartition),
// authorized as the produce is (write on the topic and on the id).

// opTxnVerify asks the coordinator's node to verify; the answer is
// txnVerifyResp.
const opTxnVerify = "txn.verify"

type txnVerifyReq struct {
	ID        string `json:"id"`
	Producer  int64  `json:"producer"`
	Epoch     int16  `json:"epoch"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Add: add the partition to the ongoing transaction (beginning one)
	// rather than only verify it is there.
	Add bool `json:"add,omitempty"`
}

// txnVerifyResp is the number of the transaction, or the coordinator's
// refusal (a txn.Error's code and message).
type txnVerifyResp struct {
	Txn  int32    `json:"txn"`
	Code txn.Code `json:"code,omitempty"`
	Msg  string   `json:"msg,omitempty"`
}

// verifiable reports whether a batch of info sent under transactional id
// id is verified as its transaction's first in a partition where its
// producer has no transaction open: a transactional data batch whose
// request names its id.
func verifiable(info batch.Info, id string) bool {
	return id != "" && info.IsTransactional() && !info.IsControl() && info.ProducerID >= 0
}

// verifyTxn verifies a verifiable batch as the first of its producer's
// transaction in p (with add, adds p to the transaction), and returns its
// transaction's number.
func (b *Broker) verifyTxn(ctx context.Context, p *partition.Partition, info batch.Info, id string, add bool) (int32, error) {
	r := txnVerifyReq{ID: id, Producer: info.ProducerID, Epoch: info.ProducerEpoch, Topic: p.Topic, Partition: p.ID, Add: add}
	resp, err := b.verifyHere(ctx, r)
	var nc *NotCoordinatorError
	if errors.As(err, &nc) && nc.Leader.RaftAddr != "" && !cluster.Forwarded(ctx) {
		err = b.peerCall(ctx, nc.Leader.RaftAddr, opTxnVerify, "", r, &resp)
	}
	if err != nil {
		return 0, err
	}
	if resp.Code != 0 {
		return 0, &txn.Error{Code: resp.Code, Msg: resp.Msg}
	}
	return resp.Txn, nil
}

// verifyHere verifies with this node's coordinator: *NotCoordinatorError
// when another node's coordinates.
func (b *Broker) verifyHere(ctx context.Context, r txnVerifyReq) (txnVerifyResp, error) {
	c, err := b.txns.get(ctx)
	if err != nil {
		return txnVerifyResp{}, err
	}
	tp := txn.TopicPartition{Topic: r.Topic, Partition: r.Partition}
	var n int32
	if r.Add {
		n, err = c.AddPartition(ctx, r.ID, r.Producer, r.Epoch, tp)
	} else {
		n, err = c.Verify(r.ID, r.Producer, r.Epoch, tp)
	}
	var te *txn.Error
	if errors.As(err, &te) {
		return txnVerifyResp{Code: te.Code, Msg: te.Msg}, nil
	}
	return txnVerifyResp{Txn: n}, err
}

// handleTxnVerify registers the verification partition leaders on other
// nodes ask of this one's coordinator.
func (b *Broker) handleTxnVerify() {
	handle(b, opTxnVerify, func(ctx context.Context, _ Principal, r txnVerifyReq) (any, error) {
		return b.verifyHere(ctx, r)
	})
}

// txnEndedError is err as the coordinator's refusal when the partition
// refused a verified batch whose transaction ended there meanwhile.
func txnEndedError(err error) error {
	if !partition.TxnEnded(err) {
		return err
	}
	return &txn.Error{Code: txn.CodeInvalidState, Msg: err.Error() + ": the transaction ended; begin another"}
}

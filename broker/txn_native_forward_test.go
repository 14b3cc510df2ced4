package broker

import (
	"errors"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/kind"
)

// A refusal of the coordinator crosses a peer call with its code (the
// node that passed the call on answers PRODUCER_FENCED, not a generic
// failure); "not the coordinator" becomes a "not leader" answer the
// caller follows; the broker's other kinds cross as before.
func TestTxnPeerAnswerRoundTrip(t *testing.T) {
	fenced := &TxnError{Code: TxnProducerFenced, Msg: "epoch 1 is older than 2"}
	var te *TxnError
	if err := fromTxnPeer(txnPeerAnswer(fenced)); !errors.As(err, &te) || te.Code != TxnProducerFenced || te.Msg != fenced.Msg {
		t.Fatalf("fenced came back as %#v", err)
	}
	if !errors.Is(te, kind.ErrFailedPrecondition) {
		t.Fatalf("%v: not a failed precondition", te)
	}
	var nl *NotLeaderError
	leader := Node{ID: "n2", RaftAddr: "127.0.0.1:1"}
	if err := txnPeerAnswer(&NotCoordinatorError{Leader: leader}); !errors.As(err, &nl) || !nl.Untouched || nl.Leader.ID != "n2" {
		t.Fatalf("not the coordinator answered %#v, want an untouched not-leader answer naming n2", err)
	}
	denied := toPeerError(kind.Errorf(auth.ErrDenied, "User:alice may not write transactional-id tx"))
	if err := fromTxnPeer(&cluster.PeerError{Kind: denied.(*cluster.PeerError).Kind, Message: denied.Error()}); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("a denial came back as %v", err)
	}
}

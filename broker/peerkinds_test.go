package broker

import (
	"errors"
	"testing"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/kind"
)

// The broker's error kinds survive a peer call: each is named on the node
// that answers and read back as the same kind on the caller, with its
// message; a generation error keeps its fields (a client re-joins at the
// generation it names). Errors of other kinds are left to package cluster.
func TestPeerErrorKinds(t *testing.T) {
	for _, k := range peerKinds {
		err := kind.Errorf(k.err, "a %s answer", k.name)
		got := fromPeerError(toPeerError(err))
		if !errors.Is(got, k.err) || got.Error() != err.Error() {
			t.Errorf("%s came back as %v", k.name, got)
		}
	}
	denied := &auth.DeniedError{Principal: auth.User("bob"), Operation: auth.OpCreate, Resource: auth.Topic("t")}
	if got := fromPeerError(toPeerError(denied)); !errors.Is(got, ErrDenied) || got.Error() != denied.Error() {
		t.Errorf("a denial came back as %v", got)
	}
	ge := &groups.GenerationError{Group: "g", Member: "m", Given: 3, Current: 5}
	var back *groups.GenerationError
	if got := fromPeerError(toPeerError(ge)); !errors.As(got, &back) || *back != *ge || !errors.Is(got, groups.ErrIllegalGeneration) {
		t.Errorf("a generation error came back as %#v", got)
	}
	other := kind.Errorf(kind.ErrInvalidArgument, "bad")
	if toPeerError(other) != other {
		t.Error("an error of a generic kind was named by the broker")
	}
}

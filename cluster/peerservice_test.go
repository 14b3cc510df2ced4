package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// A peer call's error keeps its kind across the wire, and a not-leader
// answer names the leader to ask.
func TestPeerAnswerKinds(t *testing.T) {
	leader := meta.Node{ID: "n1", RaftAddr: "h:2"}
	for _, tc := range []struct {
		err  error
		kind error
	}{
		{kind.Errorf(kind.ErrFailedPrecondition, "removed"), kind.ErrFailedPrecondition},
		{kind.Errorf(kind.ErrInvalidArgument, "no id"), kind.ErrInvalidArgument},
		{kind.Errorf(kind.ErrUnavailable, "later"), kind.ErrUnavailable},
		{errors.New("disk on fire"), kind.ErrUnavailable},
		{errOtherCluster("a", "b", "h:1"), errOther},
		{&NotLeaderError{What: metaWhat, Leader: leader}, kind.ErrFailedPrecondition},
	} {
		var buf bytes.Buffer
		if err := writePeerFrame(&buf, answerOf(tc.err)); err != nil {
			t.Fatal(err)
		}
		var a peerAnswer
		if err := readPeerFrame(&buf, &a); err != nil {
			t.Fatal(err)
		}
		got := a.err()
		var nl *NotLeaderError
		if errors.As(tc.err, &nl) {
			if !errors.As(got, &nl) || nl.Leader != leader {
				t.Fatalf("not leader came back as %v", got)
			}
			continue
		}
		if !errors.Is(got, tc.kind) || got.Error() == "" {
			t.Fatalf("%v came back as %v, want kind %v", tc.err, got, tc.kind)
		}
	}
	if err := answerOf(nil).err(); err != nil {
		t.Fatalf("success came back as %v", err)
	}
}

// A frame longer than maxPeerFrame is refused before it is read.
func TestPeerFrameBound(t *testing.T) {
	r := bytes.NewReader(binary.BigEndian.AppendUint32(nil, maxPeerFrame+1))
	var req peerRequest
	if err := readPeerFrame(r, &req); err == nil {
		t.Fatal("an oversized frame was taken")
	}
}

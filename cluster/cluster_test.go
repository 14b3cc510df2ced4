package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

func TestErrorKinds(t *testing.T) {
	err := kind.Errorf(kind.ErrUnavailable, "topic %q is being set up on this node: retry", "t")
	if !errors.Is(err, kind.ErrUnavailable) || errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("kind of %v", err)
	}
	if err.Error() != `topic "t" is being set up on this node: retry` {
		t.Fatalf("message %q carries more than its text", err.Error())
	}
	none := &NotLeaderError{What: metaWhat}
	if !errors.Is(none, kind.ErrNoLeader) {
		t.Fatal("a NotLeaderError without a leader is kind.ErrNoLeader")
	}
	some := &NotLeaderError{What: metaWhat, Leader: meta.Node{ID: "n2", APIAddr: "h:1"}}
	if errors.Is(some, kind.ErrNoLeader) {
		t.Fatal("a NotLeaderError naming a leader is not kind.ErrNoLeader")
	}
	var nl *NotLeaderError
	if !errors.As(fmt.Errorf("wrapped: %w", some), &nl) || nl.Leader.ID != "n2" {
		t.Fatal("NotLeaderError not found through a wrap")
	}
	for _, e := range []error{err, some, partition.ErrTopicExists, context.Canceled} {
		if !known(e) {
			t.Errorf("%v: known kind not recognised", e)
		}
	}
	if known(errors.New("disk on fire")) {
		t.Error("an unknown error taken for a known kind")
	}
}

func TestForwardedMark(t *testing.T) {
	ctx := context.Background()
	if Forwarded(ctx) || !Forwarded(WithForwarded(ctx)) {
		t.Fatal("the forwarded mark is not what was set")
	}
}

// The status of a partition is the view of the replica that says it
// leads, in the highest term; without one, any replica's.
func TestBestView(t *testing.T) {
	views := indexViews(map[string][]ReplicaStatus{
		"a": {{Topic: "t", Partition: 0, Leader: "a", Term: 3, RaftState: "Leader on a"}},
		"b": {{Topic: "t", Partition: 0, Leader: "b", Term: 5, RaftState: "Leader on b"},
			{Topic: "t", Partition: 1, Leader: "", Term: 5, RaftState: "Follower on b"}},
		"c": {{Topic: "t", Partition: 0, Leader: "b", Term: 5, RaftState: "Follower on c"}},
	})
	got := bestView("t", 0, []string{"a", "b", "c"}, views)
	if got.Leader != "b" || got.Term != 5 || got.RaftState != "Leader on b" || len(got.Replicas) != 3 {
		t.Fatalf("partition 0: %+v", got)
	}
	got = bestView("t", 1, []string{"a", "b"}, views)
	if got.RaftState != "Follower on b" {
		t.Fatalf("partition 1: %+v", got)
	}
	got = bestView("t", 2, []string{"a"}, views)
	if got.RaftState != "no replica answered" || got.Leader != "" {
		t.Fatalf("partition 2: %+v", got)
	}
}

func TestLoads(t *testing.T) {
	st := meta.State{
		Nodes:  map[string]meta.Node{"a": {ID: "a"}, "b": {ID: "b"}, "c": {ID: "c"}},
		Topics: map[string]meta.Topic{"t": {Replicas: [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}}}},
	}
	byID := map[string][2]int{}
	for _, l := range loads(st, "c") {
		byID[l.ID] = [2]int{l.Replicas, l.Leaders}
	}
	if len(byID) != 2 || byID["a"] != [2]int{2, 2} || byID["b"] != [2]int{2, 1} {
		t.Fatalf("loads without c: %v", byID)
	}
}

// A generation the metadata group refuses as taken comes back as it is, so
// the coordinator asks again above the record (it was wrapped as a
// retriable failure about idempotent producers, which hid it: a soak's
// coordinator gave up, logging "generation 2 asked, 77 already recorded:
// ... retry (an idempotent producer's retry is not duplicated)").
func TestRaftErrorKeepsGenerationTaken(t *testing.T) {
	taken := &offsets.GenerationTakenError{Group: "g", Asked: 2, Recorded: 77}
	err := (&Cluster{}).RaftError(taken)
	if !errors.Is(err, offsets.ErrGenerationTaken) || err.Error() != taken.Error() {
		t.Fatalf("RaftError(%v) = %v, want it unchanged", taken, err)
	}
}

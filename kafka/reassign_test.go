package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// On a node that runs alone, a partition reassigned to the node itself is
// a success that changes nothing; to a broker that does not exist, or a
// cancellation, INVALID_REPLICA_ASSIGNMENT; an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION; nothing is ever being moved; a principal
// that may not alter (describe) the cluster is refused.
func TestPartitionReassignmentsOneNode(t *testing.T) {
	b, _, admin, eve := secureNode(t)
	ctx := testCtx(t)
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("ra", 1)); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admin)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("ra", 0, []int32{1})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res.Error() != nil {
		t.Fatalf("to itself: %v %v", err, res.Error())
	}
	for what, mk := range map[string]func(*kadm.AlterPartitionAssignmentsReq){
		"to broker 2": func(r *kadm.AlterPartitionAssignmentsReq) { r.Assign("ra", 0, []int32{2}) },
		"cancel":      func(r *kadm.AlterPartitionAssignmentsReq) { r.CancelAssign("ra", 0) },
	} {
		var r kadm.AlterPartitionAssignmentsReq
		mk(&r)
		res, err := adm.AlterPartitionAssignments(ctx, r)
		if err != nil || !errors.Is(res["ra"][0].Err, kerr.InvalidReplicaAssignment) {
			t.Fatalf("%s: %v %+v, want INVALID_REPLICA_ASSIGNMENT", what, err, res)
		}
	}
	var unknown kadm.AlterPartitionAssignmentsReq
	unknown.Assign("ra", 5, []int32{1})
	if res, _ := adm.AlterPartitionAssignments(ctx, unknown); !errors.Is(res["ra"][5].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("an unknown partition: %+v", res)
	}
	if moves, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"ra": {0: {}}}); err != nil || len(moves) != 0 {
		t.Fatalf("moves under way: %+v %v", moves, err)
	}
	evil := kadm.NewClient(eve)
	if res, err := evil.AlterPartitionAssignments(ctx, req); !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(res.Error(), kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve moves a partition: %v %+v", err, res)
	}
	if _, err := evil.ListPartitionReassignments(ctx, kadm.TopicsSet{"ra": {0: {}}}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve lists the moves: %v", err)
	}
}

package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectLeaders on a node that runs alone answers as a single Kafka broker
// does: every partition's only replica leads it, so a preferred or an
// unclean election is ELECTION_NOT_NEEDED; asked for every partition, the
// answer lists none; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION;
// a principal that may not alter the cluster is refused.
func TestElectLeadersOneNode(t *testing.T) {
	b, _, admin, eve := secureNode(t)
	ctx := testCtx(t)
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("el", 2)); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admin)
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		res, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{"el": {0: {}, 1: {}}, "nope": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 2; p++ {
			if e := res["el"][p].Err; !errors.Is(e, kerr.ElectionNotNeeded) {
				t.Fatalf("how %v, el/%d: %v, want ELECTION_NOT_NEEDED", how, p, e)
			}
		}
		if e := res["nope"][0].Err; !errors.Is(e, kerr.UnknownTopicOrPartition) {
			t.Fatalf("how %v, an unknown topic: %v", how, e)
		}
	}
	if res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil || len(res) != 0 {
		t.Fatalf("every partition: %+v %v, want none listed", res, err)
	}
	res, err := kadm.NewClient(eve).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}}})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(res["el"][0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve elects: %+v %v", res, err)
	}
}

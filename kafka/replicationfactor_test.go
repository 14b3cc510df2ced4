package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A replication factor above the node count is INVALID_REPLICATION_FACTOR
// from CreateTopics (created or validate-only), as Kafka answers for more
// replicas than brokers; nothing is created.
func TestReplicationFactorAboveNodes(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	for _, validate := range []bool{false, true} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validate
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "rf3", 1, 3
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].ErrorCode; code != kerr.InvalidReplicationFactor.Code {
			t.Fatalf("validate-only %v: code %v (%v), want INVALID_REPLICATION_FACTOR", validate, kerr.ErrorForCode(code), resp.Topics[0].ErrorMessage)
		}
	}
	if topics, err := kadm.NewClient(cl).ListTopics(ctx, "rf3"); err != nil || topics.Has("rf3") && topics["rf3"].Err == nil {
		t.Fatalf("the refused topic exists: %v %+v", err, topics)
	}
}

package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// On a node that does not lead the cluster metadata (the fake answers as
// the real core does there), ListGroups lists no group without an error
// and Metadata reports a topic it lacks as UNKNOWN_TOPIC_OR_PARTITION, as
// a Kafka broker that does not coordinate any group or know the topic.
func TestNonMetadataLeaderAnswersLikeABroker(t *testing.T) {
	f := newFakeCore()
	f.metaLeader = &Node{ID: "n2", KafkaID: 2}
	s := startServer(t, f, Config{})
	cl := newClient(t, s.AdvertisedAddr())
	CheckListsNoGroups(t, cl.Broker(1))
	CheckUnknownTopic(t, cl.Broker(1))
	if _, err := kadm.NewClient(cl).ListGroups(testCtx(t)); err != nil {
		t.Fatalf("kadm ListGroups: %v", err)
	}
}

// CheckListsNoGroups (exported for the cluster tests of package
// kafka_test): a ListGroups sent to b answers error code 0 and no
// group.
func CheckListsNoGroups(t *testing.T, b *kgo.Broker) {
	t.Helper()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Groups) != 0 {
		t.Fatalf("ListGroups on a node that does not coordinate groups: code %d (%v), groups %+v; want 0 and none",
			resp.ErrorCode, kerr.ErrorForCode(resp.ErrorCode), resp.Groups)
	}
}

// CheckUnknownTopic: Metadata for a topic nobody created, sent to b,
// answers UNKNOWN_TOPIC_OR_PARTITION for it.
func CheckUnknownTopic(t *testing.T, b *kgo.Broker) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("never-created")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 {
		t.Fatalf("Metadata answers %d topics, want 1", len(resp.Topics))
	}
	if code := resp.Topics[0].ErrorCode; !errors.Is(kerr.ErrorForCode(code), kerr.UnknownTopicOrPartition) {
		t.Fatalf("Metadata for an unknown topic: code %d (%v), want UNKNOWN_TOPIC_OR_PARTITION", code, kerr.ErrorForCode(code))
	}
}

// CheckConsumeUnknownTopic is franz-go's TestIssue648 seeded with addr: a
// consumer of a topic that does not exist, keeping retriable errors, sees
// UNKNOWN_TOPIC_OR_PARTITION and no other error.
func CheckConsumeUnknownTopic(t *testing.T, addr string) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics("bizbazbuz"), kgo.FetchMaxWait(time.Second), kgo.KeepRetryableFetchErrors())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	fs := cl.PollFetches(ctx)
	cancel()
	found := false
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("consuming an unknown topic through %s: %v, want UNKNOWN_TOPIC_OR_PARTITION", addr, err)
		}
		found = found || errors.Is(err, kerr.UnknownTopicOrPartition)
	})
	if !found {
		t.Errorf("consuming an unknown topic through %s: no UNKNOWN_TOPIC_OR_PARTITION", addr)
	}
}

// NeedCommand is needCommand, for the tests of package kafka_test.
func NeedCommand(t *testing.T, name, pkg string) { t.Helper(); needCommand(t, name, pkg) }

// While no node leads the cluster metadata (an election), FindCoordinator
// for a group (v3 and v4's batched form) answers this node, whose group
// requests answer the retried NOT_COORDINATOR until a coordinator is
// known, and not COORDINATOR_NOT_AVAILABLE, on which franz-go fails an
// OffsetFetch at once: a member fetching its offsets during an election
// waits for the next coordinator instead of failing.
func TestFindCoordinatorDuringElection(t *testing.T) {
	f := newFakeCore()
	f.metaLeader = &Node{} // no leader known
	s := startServer(t, f, Config{})
	ctx := testCtx(t)
	for v, cl := range map[int16]*kgo.Client{
		3: newClient(t, s.AdvertisedAddr(), kgo.MaxVersions(kversion.V2_8_0())),
		4: newClient(t, s.AdvertisedAddr()),
	} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g"}
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		code, node := resp.ErrorCode, resp.NodeID
		if v >= 4 {
			if len(resp.Coordinators) != 1 {
				t.Fatalf("v%d: %d coordinators, want 1", v, len(resp.Coordinators))
			}
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if resp.Version != v || code != 0 || node != f.LocalNode().KafkaID {
			t.Fatalf("FindCoordinator v%d (sent v%d) during an election: code %d (%v), node %d; want 0 and this node (%d)",
				v, resp.Version, code, kerr.ErrorForCode(code), node, f.LocalNode().KafkaID)
		}
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range"})
	resp, err := join.RequestWith(ctx, newClient(t, s.AdvertisedAddr()).Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.NotCoordinator) || !kerr.IsRetriable(err) {
		t.Fatalf("JoinGroup on that node: %v, want the retriable NOT_COORDINATOR", err)
	}
}

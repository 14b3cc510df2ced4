package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	checkListsNoGroups(t, cl.Broker(1))
	checkUnknownTopic(t, cl.Broker(1))
	if _, err := kadm.NewClient(cl).ListGroups(testCtx(t)); err != nil {
		t.Fatalf("kadm ListGroups: %v", err)
	}
}

// checkListsNoGroups: a ListGroups sent to b answers error code 0 and no
// group.
func checkListsNoGroups(t *testing.T, b *kgo.Broker) {
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

// checkUnknownTopic: Metadata for a topic nobody created, sent to b,
// answers UNKNOWN_TOPIC_OR_PARTITION for it.
func checkUnknownTopic(t *testing.T, b *kgo.Broker) {
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

// checkConsumeUnknownTopic is franz-go's TestIssue648 seeded with addr: a
// consumer of a topic that does not exist, keeping retriable errors, sees
// UNKNOWN_TOPIC_OR_PARTITION and no other error.
func checkConsumeUnknownTopic(t *testing.T, addr string) {
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

// In a 3-node cluster every node answers ListGroups and Metadata for an
// unknown topic as a Kafka broker: the nodes that do not lead the metadata
// list no group with code 0 and know no unknown topic (a franz-go consumer
// seeded with one sees UNKNOWN_TOPIC_OR_PARTITION), and kadm's ListGroups
// (sent to every broker) lists a group with committed offsets.
func TestClusterEveryNodeAnswersLikeABroker(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	ctx := testCtx(t)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	var md kadm.Metadata
	waitFor(t, "metadata listing 3 brokers and a controller", func() bool {
		var err error
		md, err = adm.Metadata(ctx)
		return err == nil && len(md.Brokers) == 3 && md.Controller >= 0
	})
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "lg"); err != nil {
		t.Fatal(err)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "lg", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "lg-group", os); err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.NodeID == md.Controller {
			continue
		}
		checkListsNoGroups(t, cl.Broker(int(b.NodeID)))
		checkUnknownTopic(t, cl.Broker(int(b.NodeID)))
	}
	for _, b := range md.Brokers {
		if b.NodeID != md.Controller {
			checkConsumeUnknownTopic(t, fmt.Sprintf("%s:%d", b.Host, b.Port))
			break
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		listed, err := adm.ListGroups(ctx)
		if err == nil {
			if _, ok := listed["lg-group"]; !ok {
				t.Fatalf("kadm ListGroups: %+v, want lg-group", listed)
			}
			break
		}
		// A metadata election during the test may fail one listing.
		if time.Now().After(deadline) {
			t.Fatalf("kadm ListGroups: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

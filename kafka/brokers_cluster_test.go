package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/kafka"
)

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
		kafka.CheckListsNoGroups(t, cl.Broker(int(b.NodeID)))
		kafka.CheckUnknownTopic(t, cl.Broker(int(b.NodeID)))
	}
	for _, b := range md.Brokers {
		if b.NodeID != md.Controller {
			kafka.CheckConsumeUnknownTopic(t, fmt.Sprintf("%s:%d", b.Host, b.Port))
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

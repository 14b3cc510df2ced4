package kafka_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/kafka"
)

// franz-go's KIP-848 consumers on a 3-node cluster, the group coordinated
// by the metadata leader: every record read once while members join and
// leave.
func TestConsumerGroup848Cluster(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := adm.CreateTopic(testCtx(t), 6, 3, nil, "k848")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	kafka.Consume848(t, seeds, "k848", "g848")
}

// franz-go's KIP-848 consumers read on across a move of their group's
// coordinator (the metadata leader stopped): the next metadata leader
// takes the group over as recorded, so the members keep their ids,
// epochs and partitions.
func TestConsumerGroup848SurvivesCoordinatorMove(t *testing.T) {
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := adm.CreateTopic(testCtx(t), 6, 3, nil, "k848m")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	kafka.Consume848AcrossMove(t, seeds, "k848m", "g848m", func() {
		old := metaLeaderNode(t, c)
		old.Stop()
		if n := metaLeaderNode(t, c); n == old {
			t.Fatal("the stopped node coordinates")
		}
	})
}

package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node/nodetest"
)

// In a cluster the group coordinator runs on the metadata leader only;
// every other node answers NotCoordinatorError naming that leader.
func TestClusterCoordinatorOnMetadataLeader(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var leaders []string
		var others []*broker.NotCoordinatorError
		for _, n := range c.Nodes() {
			err := n.Server().Broker().CoordinatesGroups()
			var nc *broker.NotCoordinatorError
			switch {
			case err == nil:
				leaders = append(leaders, n.ID)
			case errors.As(err, &nc):
				others = append(others, nc)
			default:
				t.Fatalf("%s: %v", n.ID, err)
			}
		}
		agreed := len(leaders) == 1 && len(others) == 2
		for _, nc := range others {
			agreed = agreed && nc.Leader.ID == leaders[0] && nc.Leader.APIAddr != ""
		}
		if agreed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinators on %v, others name %v", leaders, others)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

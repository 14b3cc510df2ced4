package kafka_test

import (
	"testing"

	"github.com/logd/logd/kafka"
)

// GroupTransactSession's consume-transform-produce on a 3-node cluster:
// the transaction coordinator on the metadata leader, the markers
// written on each partition's leader over the peer service.
func TestClusterGroupTransactSession(t *testing.T) {
	addrs := startCluster(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	kafka.TransactSessionForTest(t, seeds, 300)
}

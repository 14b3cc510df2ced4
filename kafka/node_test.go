package kafka

import (
	"context"
	"testing"

	"github.com/logd/logd/broker"
)

// testNode is a real single node (package broker on a temporary data
// directory) serving Kafka on 127.0.0.1, for the end-to-end tests.
type testNode struct {
	addr string
	core *broker.Broker
	srv  *Server
}

func startNode(t *testing.T) *testNode { return startNodeTB(t) }

func startNodeTB(t testing.TB) *testNode {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Config{Core: b, Logger: quietLogger()})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Ready(broker.Node{KafkaAddr: s.AdvertisedAddr()})
	t.Cleanup(func() {
		b.Shutdown()
		s.Close()
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	return &testNode{addr: s.AdvertisedAddr(), core: b, srv: s}
}

func (n *testNode) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	n.createTopicTB(t, name, partitions)
}

func (n *testNode) createTopicTB(t testing.TB, name string, partitions int32) {
	t.Helper()
	if _, err := n.core.CreateTopic(context.Background(), "", topicConfig(name, partitions)); err != nil {
		t.Fatal(err)
	}
}

package kafka

import (
	"context"
	"testing"
)

// testNode is a node serving Kafka on 127.0.0.1 for the client tests.
type testNode struct {
	addr string
	core Core
}

func startNode(t *testing.T) *testNode {
	t.Helper()
	core := newFakeCore()
	s := startServer(t, core, Config{})
	return &testNode{addr: s.Addr().String(), core: core}
}

func (n *testNode) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	if _, err := n.core.CreateTopic(context.Background(), "", topicConfig(name, partitions)); err != nil {
		t.Fatal(err)
	}
}

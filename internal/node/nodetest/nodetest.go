// Package nodetest starts an in-process logd node for tests.
package nodetest

import (
	"testing"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
)

// Start starts a node on 127.0.0.1 with a fresh data directory and stops it
// when the test ends. mutate, when given, adjusts the config first.
func Start(t testing.TB, mutate ...func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0"}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := node.Start(cfg)
	if err != nil {
		t.Fatalf("nodetest: start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

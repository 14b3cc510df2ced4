// Package servertest starts an in-process logd node for tests.
package servertest

import (
	"testing"

	"github.com/logd/logd/internal/server"
)

// Start starts a node on 127.0.0.1 with a fresh data directory and stops it
// when the test ends. mutate, when given, adjusts the config first.
func Start(t testing.TB, mutate ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("servertest: start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

package clustertest

import (
	"runtime"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// Closing a cluster stops every goroutine it started: Raft, transports,
// the mux, logs and Pebble.
func TestCloseLeaksNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	c := New(t, Options{Nodes: 3, Groups: []string{"p/a/0", "p/a/1"}})
	for _, g := range []string{"p/a/0", "p/a/1"} {
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
		if _, err := c.Append(g, b, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		c.WaitConverged(g, 30*time.Second)
	}
	c.Kill(c.Leader("p/a/0").ID)
	c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

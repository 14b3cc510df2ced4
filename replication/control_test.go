package replication_test

import (
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// ConfirmRead lets the leader serve a read, sends a follower's reader to the
// leader, and refuses on a leader cut off from the others: it can no
// longer prove it leads, though Raft still calls it leader for a while.
func TestConfirmRead(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Groups: []string{group}})
	old := c.Leader(group)
	lp := old.Replica(group)
	if err := lp.ConfirmRead(within(t, 10*time.Second)); err != nil {
		t.Fatalf("leader: %v", err)
	}
	for _, n := range c.Nodes() {
		if n == old {
			continue
		}
		// A follower names the leader once it has heard from it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := n.Replica(group).ConfirmRead(within(t, time.Second))
			var nl *replication.NotLeaderError
			if !errors.As(err, &nl) {
				t.Fatalf("%s, a follower: %v, want a NotLeaderError", n.ID, err)
			}
			id, _ := n.Replica(group).Leader()
			if string(nl.LeaderID) == old.ID && string(id) == old.ID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s, a follower: %v (knows leader %q), want a NotLeaderError naming %s", n.ID, err, id, old.ID)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	servers, err := lp.Servers()
	if err != nil || len(servers) != len(c.Nodes()) {
		t.Fatalf("servers %v, %v: want %d", servers, err, len(c.Nodes()))
	}
	c.Net.Isolate(old.ID, c.IDs()...)
	if err := lp.ConfirmRead(within(t, 30*time.Second)); err == nil {
		t.Fatal("a leader cut off from every other replica served a read")
	}
}

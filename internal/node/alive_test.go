package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/logd/logd/internal/node/nodetest"
)

// A node that restarted shows alive in the cluster status of the others
// as soon as it serves: the first status asked after its restart, not one
// some seconds later, sees it (the peers' sessions to its old process are
// dead, and must not be used for the status call).
func TestRestartedNodeAliveAtOnce(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	c.WaitMembers(3, time.Minute)
	asker, other := c.Nodes()[0], c.Nodes()[2]
	alive := func() map[string]bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := asker.Server().Broker().ClusterStatus(ctx, "", false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, n := range st.Nodes {
			out[n.ID] = n.Alive
		}
		return out
	}
	if a := alive(); !a[other.ID] {
		t.Fatalf("before the restart: %v", a)
	}
	other.Stop()
	if a := alive(); a[other.ID] {
		t.Fatalf("%s stopped but alive: %v", other.ID, a)
	}
	other.Restart()
	if a := alive(); !a[other.ID] {
		t.Fatalf("%s restarted and serving, but the first status after shows it down: %v", other.ID, a)
	}
}

package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/logd/logd/replication/meta"
)

// Removing a node moves its replicas even where it is needed for the
// group's majority (a partition of one or two replicas): the moved
// partitions keep their records and their groups' voters become the new
// placement; the removed node closes its replicas once their groups no
// longer count it.
func TestRemoveNodeMovesSmallGroups(t *testing.T) {
	for _, replicas := range []int32{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			h := newHarness(t, 3, nil)
			cfg := h.createTopic(topicConfig("small", 3, replicas))
			h.waitLocal(cfg)
			for i := range cfg.Partitions {
				h.appendTo("small", i, 3)
			}
			leader := h.metaLeader()
			gone := h.followerOf(leader).id
			if err := h.onMetaLeader(func(c *Cluster) error { _, err := c.RemoveNode(context.Background(), gone); return err }); err != nil {
				t.Fatalf("remove %s: %v", gone, err)
			}
			for i, set := range h.metaLeader().cl().State().Topics["small"].Replicas {
				want := slices.Sorted(slices.Values(set))
				h.eventually(fmt.Sprintf("small/%d's voters become %v with its records", i, want), func() (bool, string) {
					for _, id := range set {
						r := h.node(id).cl().LocalReplica(meta.GroupOf(cfg, int32(i)))
						if r == nil {
							return false, id + " has no replica"
						}
						servers, err := r.Servers()
						if got := voters(servers); err != nil || !slices.Equal(got, want) || r.Log().HighWatermark() != 3 {
							return false, fmt.Sprintf("%s: %v (%v) hw %d", id, got, err, r.Log().HighWatermark())
						}
					}
					return true, ""
				})
			}
			h.eventually(gone+" closes the replicas moved off it", func() (bool, string) {
				for i := range cfg.Partitions {
					if h.node(gone).cl().LocalReplica(meta.GroupOf(cfg, i)) != nil {
						return false, fmt.Sprintf("small/%d open", i)
					}
				}
				return true, ""
			})
		})
	}
}

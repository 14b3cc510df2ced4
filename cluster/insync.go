package cluster

import "github.com/logd/logd/partition"

// InSyncReplicas counts the replicas of p that are in sync, for a topic's
// min.insync.replicas: the replicas the placement names whose node is
// this one or answered on its Raft port lately (reachable). Raft has no
// ISR; the leader sends each reachable voter every entry, and Raft's
// commit already waits for a quorum of them. A node never checked counts
// as reachable until its first check answers.
func (c *Cluster) InSyncReplicas(p *partition.Partition) int {
	_, set, ok := c.meta.FSM.Placement(p.Topic, p.ID)
	if !ok {
		return 0
	}
	n := 0
	for _, id := range set {
		if id == c.self || c.reachable(id) {
			n++
		}
	}
	return n
}

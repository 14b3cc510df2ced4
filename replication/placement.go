package replication

import (
	"cmp"
	"fmt"
	"slices"
)

// Placement: which nodes hold a partition's replicas, and which of them
// should lead. A replica set is a list of node ids; its first node is the
// partition's preferred leader, the node leadership is moved to when
// leaders are spread (Replica.TransferLeadership). These functions are
// pure and deterministic (ties go to the smaller node id), so every node
// computing a placement from the same metadata gets the same answer.

// NodeLoad is a node's current share of the cluster's partitions.
type NodeLoad struct {
	ID       string
	Replicas int // replicas it holds
	Leaders  int // partitions it is the preferred leader of
}

// PlaceReplicas places the replicas of a new topic's partitions on nodes,
// given their current load: each partition gets `replicas` distinct nodes,
// the least loaded first, and preferred leaders are spread so that no node
// leads more than one partition more than another (when loads start even).
func PlaceReplicas(nodes []NodeLoad, partitions, replicas int) ([][]string, error) {
	if replicas < 1 || replicas > len(nodes) {
		return nil, fmt.Errorf("replication: %d replicas on %d nodes: want 1..%d", replicas, len(nodes), len(nodes))
	}
	if partitions < 1 {
		return nil, fmt.Errorf("replication: %d partitions: want at least 1", partitions)
	}
	load := loadMap(nodes)
	ids := nodeIDs(nodes)
	out := make([][]string, partitions)
	for p := range out {
		set := make([]string, 0, replicas)
		leader := least(ids, set, func(a, b string) int {
			return cmp.Or(cmp.Compare(load[a].Leaders, load[b].Leaders), cmp.Compare(load[a].Replicas, load[b].Replicas))
		})
		set = append(set, leader)
		load[leader].Leaders++
		load[leader].Replicas++
		for len(set) < replicas {
			n := least(ids, set, func(a, b string) int { return cmp.Compare(load[a].Replicas, load[b].Replicas) })
			set = append(set, n)
			load[n].Replicas++
		}
		out[p] = set
	}
	return out, nil
}

// ReplaceNode moves every replica held by removed to another node, the
// least loaded one not already in the partition's set. A moved preferred
// leader is succeeded by the partition's next replica (which holds the
// data); the new replica goes last, since it starts empty. nodes should not
// include removed.
func ReplaceNode(sets [][]string, removed string, nodes []NodeLoad) ([][]string, error) {
	load := loadMap(nodes)
	ids := nodeIDs(nodes)
	out := make([][]string, len(sets))
	for p, set := range sets {
		i := slices.Index(set, removed)
		if i < 0 {
			out[p] = slices.Clone(set)
			continue
		}
		kept := slices.Delete(slices.Clone(set), i, i+1)
		n := least(ids, slices.Concat(kept, []string{removed}), func(a, b string) int { return cmp.Compare(load[a].Replicas, load[b].Replicas) })
		if n == "" {
			return nil, fmt.Errorf("replication: partition %d: no node left to replace %s (replicas %v, nodes %v)", p, removed, set, ids)
		}
		load[n].Replicas++
		if i == 0 && len(kept) > 0 {
			if l, ok := load[kept[0]]; ok {
				l.Leaders++
			}
		}
		out[p] = append(kept, n)
	}
	return out, nil
}

func loadMap(nodes []NodeLoad) map[string]*NodeLoad {
	m := make(map[string]*NodeLoad, len(nodes))
	for _, n := range nodes {
		m[n.ID] = &n
	}
	return m
}

func nodeIDs(nodes []NodeLoad) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// least returns the node of ids, not in exclude, that orders first by by,
// then by id ("" when every node is excluded). ids is sorted.
func least(ids, exclude []string, by func(a, b string) int) string {
	best := ""
	for _, id := range ids {
		if slices.Contains(exclude, id) {
			continue
		}
		if best == "" || by(id, best) < 0 {
			best = id
		}
	}
	return best
}

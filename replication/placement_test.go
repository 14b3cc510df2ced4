package replication

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func even(n int) []NodeLoad {
	nodes := make([]NodeLoad, n)
	for i := range nodes {
		nodes[i] = NodeLoad{ID: fmt.Sprintf("n%d", i+1)}
	}
	return nodes
}

// spread returns the smallest and largest count per node of replicas and
// of preferred leaders, checking every set is distinct and of size rf.
func spread(t *testing.T, sets [][]string, nodes []NodeLoad, rf int) (replicas, leaders [2]int) {
	t.Helper()
	rc, lc := map[string]int{}, map[string]int{}
	for _, n := range nodes {
		rc[n.ID], lc[n.ID] = n.Replicas, n.Leaders
	}
	for p, set := range sets {
		if len(set) != rf {
			t.Fatalf("partition %d: %v, want %d replicas", p, set, rf)
		}
		seen := map[string]bool{}
		for _, n := range set {
			if seen[n] {
				t.Fatalf("partition %d: %v holds %s twice", p, set, n)
			}
			if _, ok := rc[n]; !ok {
				t.Fatalf("partition %d: unknown node %s", p, n)
			}
			seen[n] = true
			rc[n]++
		}
		lc[set[0]]++
	}
	minmax := func(m map[string]int) [2]int {
		vs := make([]int, 0, len(m))
		for _, v := range m {
			vs = append(vs, v)
		}
		return [2]int{slices.Min(vs), slices.Max(vs)}
	}
	return minmax(rc), minmax(lc)
}

func TestPlaceReplicasBalanced(t *testing.T) {
	cases := []struct{ nodes, partitions, rf int }{
		{1, 4, 1}, {3, 1, 3}, {3, 6, 3}, {3, 7, 2}, {5, 10, 3}, {5, 12, 3}, {7, 100, 3}, {4, 3, 1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dnodes/%dparts/rf%d", c.nodes, c.partitions, c.rf), func(t *testing.T) {
			nodes := even(c.nodes)
			sets, err := PlaceReplicas(nodes, c.partitions, c.rf)
			if err != nil {
				t.Fatal(err)
			}
			r, l := spread(t, sets, nodes, c.rf)
			if r[1]-r[0] > 1 || l[1]-l[0] > 1 {
				t.Fatalf("replicas per node %v, leaders per node %v: want a spread of at most 1\n%v", r, l, sets)
			}
			again, _ := PlaceReplicas(nodes, c.partitions, c.rf)
			if !reflect.DeepEqual(sets, again) {
				t.Fatal("placement is not deterministic")
			}
		})
	}
}

func TestPlaceReplicasFavoursLightNodes(t *testing.T) {
	nodes := []NodeLoad{{ID: "a", Replicas: 6, Leaders: 2}, {ID: "b", Replicas: 6, Leaders: 2}, {ID: "c", Replicas: 6, Leaders: 2}, {ID: "new"}}
	sets, err := PlaceReplicas(nodes, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	for p, set := range sets {
		if !slices.Contains(set, "new") {
			t.Fatalf("partition %d on %v: the empty node should take every new partition", p, set)
		}
	}
	_, l := spread(t, sets, nodes, 2)
	if l[1] > 3 {
		t.Fatalf("leaders per node %v", l)
	}
}

func TestPlaceReplicasErrors(t *testing.T) {
	for _, c := range []struct{ nodes, partitions, rf int }{{3, 1, 4}, {3, 1, 0}, {3, 0, 1}, {0, 1, 1}} {
		if _, err := PlaceReplicas(even(c.nodes), c.partitions, c.rf); err == nil {
			t.Errorf("%d nodes, %d partitions, rf %d: no error", c.nodes, c.partitions, c.rf)
		}
	}
}

func TestReplaceNode(t *testing.T) {
	nodes := even(5)
	sets, err := PlaceReplicas(nodes, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	// The load of the remaining nodes, without n3.
	var rest []NodeLoad
	for _, n := range nodes {
		if n.ID == "n3" {
			continue
		}
		for _, set := range sets {
			if slices.Contains(set, n.ID) {
				n.Replicas++
			}
			if set[0] == n.ID {
				n.Leaders++
			}
		}
		rest = append(rest, n)
	}
	moved, err := ReplaceNode(sets, "n3", rest)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for p, set := range moved {
		if slices.Contains(set, "n3") {
			t.Fatalf("partition %d still on n3: %v", p, set)
		}
		for _, n := range set {
			counts[n]++
		}
		old := sets[p]
		if i := slices.Index(old, "n3"); i >= 0 {
			kept := slices.Delete(slices.Clone(old), i, i+1)
			if !slices.Equal(set[:2], kept) {
				t.Fatalf("partition %d: %v -> %v: the kept replicas must keep their order, the new one last", p, old, set)
			}
		} else if !slices.Equal(set, old) {
			t.Fatalf("partition %d without n3 changed: %v -> %v", p, old, set)
		}
	}
	vs := []int{}
	for _, v := range counts {
		vs = append(vs, v)
	}
	if slices.Max(vs)-slices.Min(vs) > 1 {
		t.Fatalf("replicas per node after removing n3: %v", counts)
	}
	if _, err := ReplaceNode([][]string{{"a", "b"}}, "a", []NodeLoad{{ID: "b"}}); err == nil {
		t.Fatal("replacing with no spare node succeeded")
	}
	// One replica: the new node takes it (and then leads).
	if got, err := ReplaceNode([][]string{{"a"}, {"b"}}, "a", []NodeLoad{{ID: "b", Replicas: 1}, {ID: "c"}}); err != nil || !reflect.DeepEqual(got, [][]string{{"c"}, {"b"}}) {
		t.Fatalf("single replica: %v, %v", got, err)
	}
	// A replica set naming a node missing from nodes (down) is kept as is.
	if got, err := ReplaceNode([][]string{{"a", "x"}}, "a", []NodeLoad{{ID: "b"}}); err != nil || !reflect.DeepEqual(got, [][]string{{"x", "b"}}) {
		t.Fatalf("unknown kept node: %v, %v", got, err)
	}
}

package replication_test

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/clustertest"
)

// sleepCostGroups is how many groups TestSleepingReplicasKeepNoGoroutine
// puts to sleep: enough that three goroutines per replica (90 a node)
// stand out of what a node keeps whatever its number of groups (about
// 35), and few enough that the cluster, set up one group after the other,
// starts within a minute under -race.
const sleepCostGroups = 30

// A sleeping replica keeps no goroutine of its own (issue 19): a node's
// goroutines with every one of its groups asleep do not grow with the
// number of groups. Each replica used to keep three, asleep or not: its
// log's syncer, its copy stream's accept loop and its role watcher.
func TestSleepingReplicasKeepNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	groups := make([]string, sleepCostGroups)
	for i := range groups {
		groups[i] = replication.PartitionGroup("idle", i)
	}
	c := clustertest.New(t, clustertest.Options{Groups: groups})
	hibernateAll(t, c, groups)
	nodes := len(c.Nodes())
	// The last RPCs' and elections' goroutines end soon after the groups
	// sleep; wait for the count to settle below the bound, or fail.
	limit := 50 + sleepCostGroups/2 // per node
	perNode := 0
	for deadline := time.Now().Add(20 * time.Second); ; {
		perNode = (runtime.NumGoroutine() - before) / nodes
		if perNode < limit || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d goroutines per node with %d groups asleep", perNode, sleepCostGroups)
	if perNode >= limit {
		t.Fatalf("%d goroutines per node with %d groups asleep, want fewer than %d; by creator:\n%s",
			perNode, sleepCostGroups, limit, goroutinesByCreator())
	}
}

// hibernateAll puts every group to sleep and waits until every replica
// sleeps. A group can wake again on its own (a follower that missed the
// marker campaigns, and its RPCs wake the others); such a group is
// hibernated again, as the node's idle check would.
func hibernateAll(t *testing.T, c *clustertest.Cluster, groups []string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		awake := awakeGroups(c, groups)
		if len(awake) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2m, %d groups still awake: %v", len(awake), awake[:min(len(awake), 10)])
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, g := range awake {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				hibernateGroup(c, g)
			}()
		}
		wg.Wait()
		// Followers sleep F/2 after the leader stopped (sleep.go).
		time.Sleep(2 * time.Second)
	}
}

// awakeGroups lists the groups with a replica awake.
func awakeGroups(c *clustertest.Cluster, groups []string) []string {
	var awake []string
	for _, g := range groups {
		for _, n := range c.Up() {
			if !n.Replica(g).Asleep() {
				awake = append(awake, g)
				break
			}
		}
	}
	return awake
}

// hibernateGroup hibernates g through the replica that leads it, if one
// does and is awake.
func hibernateGroup(c *clustertest.Cluster, g string) {
	l, err := c.WaitLeader(g, 5*time.Second)
	if err != nil || l.Replica(g).Asleep() {
		return
	}
	l.Replica(g).Hibernate(5 * time.Second)
}

// goroutinesByCreator counts the process's goroutines by the function
// that created them, most first.
func goroutinesByCreator() string {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	counts := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		creator := "(none)"
		if _, after, ok := strings.Cut(g, "\ncreated by "); ok {
			creator, _, _ = strings.Cut(after, " in goroutine")
			creator, _, _ = strings.Cut(creator, "\n")
		}
		counts[creator]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return counts[b] - counts[a] })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%6d %s\n", counts[k], k)
	}
	return sb.String()
}

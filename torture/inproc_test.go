package torture

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/logd/logd/internal/server"
)

// inProcessKinds are the faults an InProcessCluster of n nodes takes: all
// of them (partitions need three nodes).
func inProcessKinds(n int) []string {
	kinds := []string{NemesisKill, NemesisPause, NemesisPauseKill, NemesisDiskFull, NemesisDiskSlow}
	if n >= 3 {
		kinds = append(kinds, NemesisPartitionIsolate, NemesisPartitionHalves, NemesisPartitionBridge)
	}
	return kinds
}

// TestTortureInProcess runs the workload for 60 seconds (seed 1) against
// three nodes in this process (see InProcessCluster) while every nemesis
// strikes, alone or combined, half of them the leader of a partition:
// kill (losing what was not fsynced), pause, pause then kill, a partition
// isolating a node, a 1/2 split, a bridge, a full disk (ENOSPC), a slow
// disk. TORTURE_INPROC_DURATION, TORTURE_INPROC_SEED and
// TORTURE_INPROC_NODES change it; TORTURE_REPORT_DIR keeps the report.
func TestTortureInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("torture: skipped in -short mode")
	}
	d, seed, nodes := 60*time.Second, int64(1), 3
	if s := os.Getenv("TORTURE_INPROC_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TORTURE_INPROC_DURATION=%q: %v", s, err)
		}
		d = v
	}
	for env, v := range map[string]*int64{"TORTURE_INPROC_SEED": &seed} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", env, s, err)
			}
			*v = n
		}
	}
	if s := os.Getenv("TORTURE_INPROC_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TORTURE_INPROC_NODES=%q: %v", s, err)
		}
		nodes = n
	}
	dir := os.Getenv("TORTURE_REPORT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	c, err := StartInProcessCluster(InProcessConfig{Nodes: nodes, Dir: dir, LoseUnsynced: true,
		Server: func(_ int, cfg *server.Config) { cfg.RetentionInterval = time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := Run(context.Background(), c, RunConfig{
		Duration:  d,
		Seed:      seed,
		ReportDir: dir,
		Workload:  WorkloadConfig{Followers: 2, Groups: 2},
		Nemesis: NemesisConfig{Kinds: inProcessKinds(nodes), Combine: true, TargetLeader: true, LeaderShare: 0.5,
			Interval: 1500 * time.Millisecond},
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report in %s\n%s", dir, rep.Text())
	if len(rep.Faults) == 0 {
		t.Errorf("no fault was injected in %s", d)
	}
	if rep.Ops[OpProduce][OutcomeOK] == 0 {
		t.Errorf("no produce was acknowledged")
	}
	if !rep.Valid {
		t.Errorf("torture found violations; report in %s", dir)
	}
}

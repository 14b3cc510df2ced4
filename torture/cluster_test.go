package torture

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// clusterKinds are the faults of the process cluster: every process,
// partition and client-network fault, a restart on another cluster's data
// directory, and a full disk when root can mount one.
func clusterKinds() []string {
	kinds := []string{NemesisKill, NemesisPause, NemesisPauseKill,
		NemesisPartitionIsolate, NemesisPartitionHalves, NemesisPartitionBridge, NemesisNetCut, NemesisForeignDataDir}
	if os.Geteuid() == 0 {
		kinds = append(kinds, NemesisDiskFull)
	}
	return kinds
}

// TestTortureCluster runs the workload against three real logd processes
// in cluster mode, every Raft link through its own proxy (RaftMesh, routed
// by LOGD_RAFT_ROUTES) and every client through a proxy, while kill -9,
// SIGSTOP longer than an election, SIGSTOP then kill, partitions (a node
// isolated, a 1/2 split, a bridge), cut client connections and, as root, a
// full disk strike: alone or two at once, half of them the leader of a
// partition. `make torture DURATION=10m` runs it at length; TORTURE_NEMESES
// picks the faults.
func TestTortureCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("torture: skipped in -short mode")
	}
	d, seed, dir := tortureParams(t)
	kinds := clusterKinds()
	if s := os.Getenv("TORTURE_NEMESES"); s != "" {
		kinds = strings.Split(s, ",")
	}
	cfg := ProcessConfig{Binary: logdBinary(t), Nodes: 3, Dir: dir, Args: ClusterArgs, RaftMesh: true, Proxy: true,
		StartTimeout: time.Minute, ServeArgs: serveArgsFromEnv()}
	for _, k := range kinds {
		if k == NemesisDiskFull || k == NemesisDiskFullRestart {
			cfg.DiskBytes = 256 << 20
		}
	}
	c, err := StartProcessCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := WaitClusterReady(ctx, c, time.Minute); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, c, RunConfig{
		Duration:  d,
		Seed:      seed,
		ReportDir: dir,
		Workload: WorkloadConfig{GroupMembers: groupMembersFromEnv(t), KafkaProducers: kafkaProducersFromEnv(t), KafkaGroupMembers: kafkaGroupFromEnv(t),
			Partitions: partitionsFromEnv(t), Quiet: quietFromEnv(t)},
		Compacted: compactedFromEnv(t),
		KVView:    kvViewFromEnv(t),
		Txn:       txnFromEnv(t),
		Share:     shareFromEnv(t),
		Nemesis: NemesisConfig{Kinds: kinds, Combine: true, TargetLeader: true, LeaderShare: 0.5, MetaLeaderShare: 0.25,
			MinDown: 2 * time.Second, MaxDown: 5 * time.Second},
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report in %s\n%s", dir, rep.Text())
	if len(rep.Faults) == 0 && d >= 10*time.Second {
		t.Errorf("no fault was injected in %s", d)
	}
	if rep.Ops[OpProduce][OutcomeOK] == 0 {
		t.Errorf("no produce was acknowledged")
	}
	if rep.KafkaProduce != nil && rep.KafkaProduce[OutcomeOK] == 0 {
		t.Errorf("no Kafka produce was acknowledged")
	}
	if !rep.Valid {
		if err := c.SaveData(); err != nil {
			t.Log(err)
		}
		t.Errorf("torture found violations; report in %s (node logs node-N.log, data node-N.data)", dir)
	}
}

// TestTortureForeignDataDir runs the workload on three real processes while
// only NemesisForeignDataDir strikes: a node restarted on the data of a
// one-node cluster of its own (holding a topic of the workload's name),
// with --join through a live node, must stay out: the membership stays the
// cluster's, the node is not ready, and no record it may have acknowledged
// is missing from the cluster.
func TestTortureForeignDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("torture: skipped in -short mode")
	}
	dir := t.TempDir()
	c, err := StartProcessCluster(ProcessConfig{Binary: logdBinary(t), Nodes: 3, Dir: dir, Args: ClusterArgs,
		Proxy: true, StartTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := WaitClusterReady(ctx, c, time.Minute); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, c, RunConfig{
		Duration:  25 * time.Second,
		Seed:      5,
		ReportDir: dir,
		Workload:  WorkloadConfig{},
		Nemesis:   NemesisConfig{Kinds: []string{NemesisForeignDataDir}, Interval: time.Second},
		Logf:      t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep.Text())
	if rep.FaultCounts[NemesisForeignDataDir] == 0 {
		t.Fatalf("no node was started on foreign data in %s", 25*time.Second)
	}
	if rep.Ops[OpProduce][OutcomeOK] == 0 {
		t.Errorf("no produce was acknowledged")
	}
	if !rep.Valid {
		t.Errorf("torture found violations with a node on another cluster's data")
	}
}

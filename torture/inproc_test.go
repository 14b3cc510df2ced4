package torture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/node"
)

// inProcessKinds are the faults an InProcessCluster of n nodes takes: all
// of them (partitions need three nodes).
func inProcessKinds(n int) []string {
	kinds := []string{NemesisKill, NemesisPause, NemesisPauseKill, NemesisDiskFull, NemesisDiskSlow,
		NemesisSubscriberFlood, NemesisDiskFullRestart}
	if n >= 3 {
		kinds = append(kinds, NemesisPartitionIsolate, NemesisPartitionHalves, NemesisPartitionBridge)
	}
	return kinds
}

// TestTortureInProcess runs the workload for 40 seconds with each of seeds
// 1, 2 and 3 against three nodes in this process (see InProcessCluster)
// while every nemesis strikes, alone or combined, half of them the leader of
// a partition: kill (losing what was not fsynced), pause, pause then kill, a
// partition isolating a node, a 1/2 split, a bridge, a full disk (ENOSPC), a
// slow disk. One seed proved little (seed 1 passed while seed 7 lost
// acknowledged records), so make test runs several. TORTURE_INPROC_DURATION,
// TORTURE_INPROC_SEEDS (comma-separated) and TORTURE_INPROC_NODES change
// it; TORTURE_REPORT_DIR keeps the reports (a directory per seed).
func TestTortureInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("torture: skipped in -short mode")
	}
	d, seeds, nodes := 40*time.Second, []int64{1, 2, 3}, 3
	if s := os.Getenv("TORTURE_INPROC_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TORTURE_INPROC_DURATION=%q: %v", s, err)
		}
		d = v
	}
	if s := os.Getenv("TORTURE_INPROC_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("TORTURE_INPROC_SEEDS=%q: %v", s, err)
			}
			seeds = append(seeds, n)
		}
	}
	if s := os.Getenv("TORTURE_INPROC_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TORTURE_INPROC_NODES=%q: %v", s, err)
		}
		nodes = n
	}
	base := os.Getenv("TORTURE_REPORT_DIR")
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := t.TempDir()
			if base != "" {
				dir = filepath.Join(base, fmt.Sprintf("seed-%d", seed))
			}
			tortureInProcess(t, d, seed, nodes, dir)
		})
	}
}

func tortureInProcess(t *testing.T, d time.Duration, seed int64, nodes int, dir string) {
	compacted := compactedFromEnv(t)
	c, err := StartInProcessCluster(InProcessConfig{Nodes: nodes, Dir: dir, LoseUnsynced: true,
		Server: func(_ int, cfg *node.Config) {
			cfg.RetentionInterval = time.Second
			if compacted != nil {
				compactedRaft(cfg)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := Run(context.Background(), c, RunConfig{
		Duration:  d,
		Seed:      seed,
		ReportDir: dir,
		Workload:  WorkloadConfig{Followers: 2, Groups: 2, GroupMembers: groupMembersFromEnv(t), Quiet: quietFromEnv(t)},
		Compacted: compacted,
		Nemesis: NemesisConfig{Kinds: inProcessKinds(nodes), Combine: true, TargetLeader: true, LeaderShare: 0.5,
			MetaLeaderShare: 0.25, Interval: 1500 * time.Millisecond},
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

// groupMembersFromEnv is TORTURE_GROUP_MEMBERS: how many members of one
// consumer group share the topic's partitions (unset: the workload's
// default, 3; 0: none; see WorkloadConfig.GroupMembers).
func groupMembersFromEnv(t *testing.T) int {
	s := os.Getenv("TORTURE_GROUP_MEMBERS")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("TORTURE_GROUP_MEMBERS=%q: want a count >= 0", s)
	}
	if n == 0 {
		return -1
	}
	return n
}

// partitionsFromEnv is TORTURE_PARTITIONS: the workload topic's
// partitions (unset: the workload's default, 3). A many-partitions run
// (issue 19) carries that many Raft groups through the same faults.
func partitionsFromEnv(t *testing.T) int32 {
	s := os.Getenv("TORTURE_PARTITIONS")
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 || n > 10000 {
		t.Fatalf("TORTURE_PARTITIONS=%q: want a count from 1 to 10000", s)
	}
	return int32(n)
}

// kafkaProducersFromEnv is TORTURE_KAFKA: how many workload producers
// produce over the Kafka protocol with franz-go (unset: 1; 0: none; see
// WorkloadConfig.KafkaProducers). Only a ProcessCluster serves Kafka.
func kafkaProducersFromEnv(t *testing.T) int {
	s := os.Getenv("TORTURE_KAFKA")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("TORTURE_KAFKA=%q: want a count >= 0", s)
	}
	return n
}

// kafkaGroupFromEnv is TORTURE_KAFKA_GROUP: how many franz-go members
// each Kafka consumer group of the workload has, one classic and one
// KIP-848 (unset: 2; 0: none; see WorkloadConfig.KafkaGroupMembers).
func kafkaGroupFromEnv(t *testing.T) int {
	s := os.Getenv("TORTURE_KAFKA_GROUP")
	if s == "" {
		return 2
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("TORTURE_KAFKA_GROUP=%q: want a count >= 0", s)
	}
	return n
}

// quietFromEnv is TORTURE_QUIET: FOR/EVERY, the workload's quiet windows
// (unset: none; see QuietWindows).
func quietFromEnv(t *testing.T) QuietWindows {
	s := os.Getenv("TORTURE_QUIET")
	q, err := ParseQuietWindows(s)
	if err != nil {
		t.Fatalf("TORTURE_QUIET=%q: %v", s, err)
	}
	return q
}

// serveArgsFromEnv is TORTURE_SERVE_ARGS split on spaces: flags added to
// every `logd serve` a test starts (ProcessConfig.ServeArgs; unset: none).
// The in-process cluster runs no logd serve and ignores them.
func serveArgsFromEnv() []string { return strings.Fields(os.Getenv("TORTURE_SERVE_ARGS")) }

package torture

import (
	"os"
	"testing"
	"time"

	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/replication"
)

// compactedFromEnv is the compacted-topic workload of the torture tests:
// on with its defaults unless TORTURE_COMPACTED=0.
func compactedFromEnv(t *testing.T) *CompactedConfig {
	switch s := os.Getenv("TORTURE_COMPACTED"); s {
	case "", "1":
		return &CompactedConfig{}
	case "0":
		return nil
	default:
		t.Fatalf("TORTURE_COMPACTED=%q: want 0 or 1", s)
		return nil
	}
}

// kvViewFromEnv is the key-value view workload of the torture tests: on
// with its defaults unless TORTURE_KV=0.
func kvViewFromEnv(t *testing.T) *KVViewConfig {
	switch s := os.Getenv("TORTURE_KV"); s {
	case "", "1":
		return &KVViewConfig{}
	case "0":
		return nil
	default:
		t.Fatalf("TORTURE_KV=%q: want 0 or 1", s)
		return nil
	}
}

// compactedRaft makes a cluster node's Raft groups snapshot every 512
// entries, looked at every 3 s, instead of every 8,192 entries every 2 to 4
// minutes: a replica compacts only what its latest snapshot covers
// (Replica.TrimLimit), so with Raft's defaults a short run would compact
// nothing. Otherwise the configuration is a group's default
// (replication.RaftConfig, and the lease a replica takes without one).
func compactedRaft(cfg *node.Config) {
	if cfg.Cluster == nil {
		return
	}
	rc := replication.RaftConfig(nil)
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout
	rc.SnapshotThreshold = 512
	rc.SnapshotInterval = 3 * time.Second
	cfg.Cluster.Raft = rc
}

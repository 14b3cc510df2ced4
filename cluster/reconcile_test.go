package cluster

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/internal/fanout/fanouttest"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// writeGatedFS lets every write to a partition's log through its gate,
// once set: a replica's bootstrap writes the group's first entry there.
type writeGatedFS struct {
	log.OSFS
	t    testing.TB
	gate atomic.Pointer[fanouttest.Gate]
}

func (f *writeGatedFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return writeGatedFile{file, f}, nil
}

type writeGatedFile struct {
	log.File
	fs *writeGatedFS
}

func (w writeGatedFile) WriteAt(b []byte, off int64) (int, error) {
	if g := w.fs.gate.Load(); g != nil {
		g.Enter(w.fs.t)
		defer g.Leave()
	}
	return w.File.WriteAt(b, off)
}

// singleNode starts a one-node cluster (without its loops: the test calls
// reconcile) whose partitions' logs are on fs, and registers the node.
func singleNode(t *testing.T, fs log.FS, opts ...func(*Config)) (*Cluster, *partition.Topics) {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	topics, err := partition.Open(partition.Options{DataDir: dir, DB: db, LogOptions: func(partition.TopicConfig) log.Options {
		return log.Options{FS: fs, ManualHighWatermark: true}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topics.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeID: "n1", RaftListener: ln, Bootstrap: true, HibernateAfter: time.Hour}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := Start(cfg,
		Options{DataDir: dir, DB: db, Topics: topics, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for deadline := time.Now().Add(fanouttest.HangGuard); !c.IsMetaLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the single node never led the metadata group")
		}
	}
	if err := c.join(context.Background(), meta.Node{ID: "n1", APIAddr: "127.0.0.1:1", RaftAddr: c.RaftAddr()}, false); err != nil {
		t.Fatal(err)
	}
	return c, topics
}

// TestReconcileOpensReplicasConcurrently: one reconcile sets up the
// replicas of a topic's partitions reconcileParallel at once, never more
// (issue 19: one after the other, a node took minutes for 10,000). Each
// bootstrap writes its group's first entry to its log, where the gate
// waits for reconcileParallel writers inside at once: one after the
// other, the gate never fills and the test fails after
// fanouttest.HangGuard.
func TestReconcileOpensReplicasConcurrently(t *testing.T) {
	fs := &writeGatedFS{t: t}
	c, topics := singleNode(t, fs)
	ctx := context.Background()
	cfg := partition.DefaultConfig("t")
	cfg.Partitions, cfg.Replicas, cfg.CreatedMs = 3*reconcileParallel, 1, time.Now().UnixMilli()
	sets := make([][]string, cfg.Partitions)
	for i := range sets {
		sets[i] = []string{"n1"}
	}
	if err := c.meta.Apply(ctx, meta.Command{Op: meta.OpCreateTopic, Topic: &meta.Topic{Config: cfg, Replicas: sets, Initial: sets}}); err != nil {
		t.Fatal(err)
	}
	// The local topic as reconcile would create it: its logs' opens are
	// not the writes the gate counts.
	if _, err := topics.Create(cfg); err != nil {
		t.Fatal(err)
	}
	g := fanouttest.NewGate(reconcileParallel)
	fs.gate.Store(g)
	if err := c.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	fs.gate.Store(nil)
	if g.Max() > reconcileParallel {
		t.Errorf("%d bootstraps writing at once, bound %d", g.Max(), reconcileParallel)
	}
	for i := range cfg.Partitions {
		r := c.rn.Replica(meta.GroupOf(cfg, i))
		if r == nil {
			t.Fatalf("partition %d: no replica after reconcile", i)
		}
		if !r.Asleep() {
			t.Errorf("partition %d: a new group is awake, want asleep (hibernation)", i)
		}
	}
}

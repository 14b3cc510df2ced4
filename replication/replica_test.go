package replication

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication/transport"
)

// A single-voter group through real Raft: offsets come back contiguous,
// Raft's compaction after a snapshot deletes nothing, and a restart
// restores the high watermark.
func TestReplicaSingleNodeSnapshotAndRestart(t *testing.T) {
	dir := t.TempDir()
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux, err := transport.New(transport.Config{Listener: ln, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	db := openPebble(t, filepath.Join(dir, "meta"), vfs.Default)
	defer db.Close()

	hub := newHub(t, mux)
	start := func() *Replica {
		stream, err := mux.Group("p/t/0")
		if err != nil {
			t.Fatal(err)
		}
		rc := raft.DefaultConfig()
		rc.TrailingLogs = 2
		p, err := OpenReplica(ReplicaConfig{
			Group: "p/t/0", NodeID: "n1", Log: openLog(t, filepath.Join(dir, "log")), DB: db,
			SnapshotDir: filepath.Join(dir, "snap"), Stream: stream, RPC: hub, Raft: rc, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start()
	if err := p.Bootstrap([]raft.Server{{ID: "n1", Address: raft.ServerAddress(mux.Addr().String())}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, p)
	var next int64
	for i := 0; i < 20; i++ {
		r, err := p.Append(within(t, 10*time.Second), testBatch("k", 3, "x"))
		if err != nil {
			t.Fatal(err)
		}
		if r.BaseOffset != next || r.LastOffset != next+2 {
			t.Fatalf("append %d: offsets %+v, want %d..%d", i, r, next, next+2)
		}
		next += 3
	}
	if hw := p.Log().HighWatermark(); hw != next {
		t.Fatalf("high watermark %d, want %d", hw, next)
	}
	if _, err := p.Append(within(t, time.Second), []byte("not a batch")); err == nil {
		t.Fatal("append of a non-batch succeeded")
	}
	if err := p.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if first, _ := p.store.FirstIndex(); first != 1 {
		t.Fatalf("first index %d after Raft's compaction, want 1: compaction must delete nothing", first)
	}
	last, _ := p.store.LastIndex()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.Log().Close()

	p = start()
	defer func() { p.Close(); p.Log().Close() }()
	if hw := p.Log().HighWatermark(); hw != next {
		t.Fatalf("high watermark %d after restart (restored from the snapshot), want %d", hw, next)
	}
	waitLeader(t, p)
	// hashicorp/raft reports the leadership before it has stored its
	// no-op (runLeader sets the state, then dispatches the entry): on a
	// loaded machine the check came first (CI, session 22).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l, _ := p.store.LastIndex()
		if l > last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last index %d after 10s: want a new leader's no-op after %d", l, last)
		}
	}
	r, err := p.Append(within(t, 10*time.Second), testBatch("k", 1, "y"))
	if err != nil {
		t.Fatal(err)
	}
	if r.BaseOffset != next {
		t.Fatalf("after restart: base offset %d, want %d", r.BaseOffset, next)
	}
}

// within returns a context that ends after d (or with the test).
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func waitLeader(t *testing.T, p *Replica) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for p.Raft().State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatalf("no leader: %v", p.Raft().State())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Retention trimming up to TrimLimit keeps every entry after the latest
// snapshot, so Raft restarts (restore, then replay) and appends continue.
func TestReplicaTrimLimit(t *testing.T) {
	dir := t.TempDir()
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux, err := transport.New(transport.Config{Listener: ln, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	db := openPebble(t, filepath.Join(dir, "meta"), vfs.Default)
	defer db.Close()
	hub := newHub(t, mux)
	start := func() *Replica {
		stream, err := mux.Group("p/t/0")
		if err != nil {
			t.Fatal(err)
		}
		p, err := OpenReplica(ReplicaConfig{
			Group: "p/t/0", NodeID: "n1", Log: openLog(t, filepath.Join(dir, "log")), DB: db,
			SnapshotDir: filepath.Join(dir, "snap"), Stream: stream, RPC: hub, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start()
	if err := p.Bootstrap([]raft.Server{{ID: "n1", Address: raft.ServerAddress(mux.Addr().String())}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, p)
	for range 100 {
		if _, err := p.Append(within(t, 10*time.Second), testBatch("k", 3, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if limit, err := p.TrimLimit(); err != nil || limit != 0 {
		t.Fatalf("trim limit without a snapshot: %d, %v; want 0", limit, err)
	}
	if err := p.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	snapIndex := p.Raft().AppliedIndex()
	for range 40 {
		if _, err := p.Append(within(t, 10*time.Second), testBatch("k", 3, "y")); err != nil {
			t.Fatal(err)
		}
	}
	limit, err := p.TrimLimit()
	if err != nil {
		t.Fatal(err)
	}
	if limit <= 0 || limit > 300 {
		t.Fatalf("trim limit %d, want within (0, 300] (the snapshot's high watermark)", limit)
	}
	if _, err := p.Log().DeleteSegmentsBefore(limit); err != nil {
		t.Fatal(err)
	}
	if first := p.Log().FirstIndex(); first == 1 || first > snapIndex+1 {
		t.Fatalf("after trimming: first index %d, want in (1, %d]", first, snapIndex+1)
	}
	p.Close()
	p.Log().Close()

	p = start()
	defer func() { p.Close(); p.Log().Close() }()
	waitLeader(t, p)
	r, err := p.Append(within(t, 10*time.Second), testBatch("k", 1, "z"))
	if err != nil {
		t.Fatal(err)
	}
	if r.BaseOffset != 420 {
		t.Fatalf("after a trimmed restart: base offset %d, want 420", r.BaseOffset)
	}
}

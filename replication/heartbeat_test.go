package replication

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/replication/raftrpc"
	"github.com/logd/logd/replication/transport"
)

// Issue 18: a leader paused (SIGSTOP) while a new leader was elected in a
// later term resumes with produce requests queued. hashicorp/raft's
// network transport hands a heartbeat to Raft on its fast path, in the
// transport's goroutine, concurrently with the leader loop: a heartbeat
// of the new leader sets the old leader's current term to the new term
// while the leader loop, already waiting in its select, takes the queued
// applies and stores them under that term (dispatchLogs reads the current
// term). Entries of the new leader's term that the new leader never wrote
// then sit in the old leader's log; Raft compares terms only, so when the
// new leader replicates its own entries at those indexes the old leader
// keeps its own (no "clearing log suffix"), applies them as committed, and
// the offsets of everything after are shifted: records acknowledged by the
// new leader at one offset are at another on this replica, after copies of
// themselves (the stale leader's batches were retries of the same records).
//
// Here n1 is a single-voter group's leader in term T; a peer n2 sends it
// a heartbeat of term T+1 (what the new leader of a 3-node group sends to
// the old leader as it resumes), then an append is started on n1, then n2
// replicates its term-(T+1) log: a no-op (a new leader's first entry) and
// one batch. n1 must end with n2's entries, the batch at the offset n2
// gave it.
func TestStaleLeaderDoesNotStoreEntriesUnderANewerLeadersTerm(t *testing.T) {
	dir := t.TempDir()
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})
	newMux := func() *transport.Mux {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, err := transport.New(transport.Config{Listener: ln, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	mux, peerMux := newMux(), newMux()
	db := openPebble(t, filepath.Join(dir, "meta"), vfs.Default)
	defer db.Close()

	const group = "p/t/0"
	stream, err := mux.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	rc := raft.DefaultConfig()
	// No timer of the leader loop may fire between the heartbeat and the
	// append: the race needs the loop waiting in its select.
	rc.HeartbeatTimeout = 2 * time.Second
	rc.ElectionTimeout = 2 * time.Second
	rc.LeaderLeaseTimeout = 2 * time.Second
	p, err := OpenReplica(ReplicaConfig{
		Group: group, NodeID: "n1", Log: openLog(t, filepath.Join(dir, "log")), DB: db,
		SnapshotDir: filepath.Join(dir, "snap"), Stream: stream, RPC: newHub(t, mux), Raft: rc, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close(); p.Log().Close() }()
	if err := p.Bootstrap([]raft.Server{{ID: "n1", Address: raft.ServerAddress(mux.Addr().String())}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, p)
	for i := 0; i < 3; i++ {
		if _, err := p.Append(within(t, 10*time.Second), testBatch("k", 2, "before")); err != nil {
			t.Fatal(err)
		}
	}
	// The leader loop is idle once the last append is applied.
	if err := p.Raft().Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	term := p.Raft().CurrentTerm()
	last, _ := p.store.LastIndex()
	next := p.Log().NextOffset()

	peer, err := newHub(t, peerMux).Group(group, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	target := raft.ServerAddress(mux.Addr().String())
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte(peerMux.Addr().String())}

	// The new leader's heartbeat: no previous entry, no entries, no commit
	// index (the transport's test for its fast path).
	var resp raft.AppendEntriesResponse
	if err := peer.AppendEntries("n1", target, &raft.AppendEntriesRequest{RPCHeader: header, Term: term + 1}, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.Term != term+1 {
		t.Fatalf("heartbeat of term %d: response %+v", term+1, resp)
	}
	// A produce request queued while the leader was paused. Its outcome
	// is unknown to the producer (it is not the leader any more): the
	// producer retries it at the new leader.
	stale := p.Raft().Apply(testBatch("k", 3, "stale"), 5*time.Second)

	// The new leader replicates: its no-op, then a batch.
	x := testBatch("k", 1, "new")
	if err := peer.AppendEntries("n1", target, &raft.AppendEntriesRequest{
		RPCHeader: header, Term: term + 1, PrevLogEntry: last, PrevLogTerm: term,
		Entries: []*raft.Log{
			{Index: last + 1, Term: term + 1, Type: raft.LogNoop},
			{Index: last + 2, Term: term + 1, Type: raft.LogCommand, Data: x},
		},
		LeaderCommitIndex: last + 2,
	}, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success {
		t.Fatalf("append entries of term %d after index %d: response %+v", term+1, last, resp)
	}
	if err := stale.Error(); err == nil {
		t.Errorf("the append started on the old leader after the heartbeat of term %d succeeded", term+1)
	}

	var e raft.Log
	if err := p.store.GetLog(last+1, &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != raft.LogNoop {
		t.Errorf("index %d holds a %v of term %d, want the new leader's no-op: the old leader stored an entry under the new leader's term", last+1, e.Type, e.Term)
	}
	if err := p.store.GetLog(last+2, &e); err != nil {
		t.Fatal(err)
	}
	info, err := batch.ParseHeader(e.Data)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != next {
		t.Errorf("the new leader's batch at index %d got offset %d here, the new leader gave it %d", last+2, info.BaseOffset, next)
	}
}

// The fast path stays open to what it is for: a follower's heartbeat of
// its own term (or an older one, which Raft ignores). A heartbeat of a
// newer term, or one reaching a leader or candidate, goes through Raft's
// loop. This is NetworkTransport's (the metadata group's), bound to a
// partition's Raft; raftrpc tests its own.
func TestHeartbeatFastPathOnlyForAFollowersTerm(t *testing.T) {
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
	stream, err := mux.Group("p/t/0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenReplica(ReplicaConfig{
		Group: "p/t/0", NodeID: "n1", Log: openLog(t, filepath.Join(dir, "log")), DB: db,
		SnapshotDir: filepath.Join(dir, "snap"), Stream: stream, RPC: newHub(t, mux), Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close(); p.Log().Close() }()
	ntStream, err := mux.Group("p/t/nt")
	if err != nil {
		t.Fatal(err)
	}
	nt := NewNetworkTransport(&raft.NetworkTransportConfig{Stream: ntStream, MaxPool: 1, Timeout: time.Second, Logger: logger})
	defer nt.Close()
	nt.Bind(p.Raft())
	heartbeat := func(term uint64) raft.RPC {
		return raft.RPC{Command: &raft.AppendEntriesRequest{Term: term}}
	}
	// Not bootstrapped: a follower of term 0.
	if p.Raft().State() != raft.Follower || p.Raft().CurrentTerm() != 0 {
		t.Fatalf("new replica: %v in term %d", p.Raft().State(), p.Raft().CurrentTerm())
	}
	if !nt.fastPathSafe(heartbeat(0)) {
		t.Error("a follower's heartbeat of its own term kept off the fast path")
	}
	if nt.fastPathSafe(heartbeat(1)) {
		t.Error("a follower's heartbeat of a newer term on the fast path")
	}
	if err := p.Bootstrap([]raft.Server{{ID: "n1", Address: raft.ServerAddress(mux.Addr().String())}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, p)
	term := p.Raft().CurrentTerm()
	for _, hb := range []uint64{term - 1, term, term + 1} {
		if nt.fastPathSafe(heartbeat(hb)) {
			t.Errorf("a leader of term %d takes a heartbeat of term %d on the fast path", term, hb)
		}
	}
}

// newHub starts a raftrpc.Hub on mux, closed at the test's end.
func newHub(t *testing.T, mux *transport.Mux) *raftrpc.Hub {
	t.Helper()
	links, err := mux.Group(raftrpc.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := raftrpc.NewHub(raftrpc.Config{Stream: links, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

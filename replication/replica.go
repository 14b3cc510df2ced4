package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication/raftrpc"
	"github.com/logd/logd/replication/transport"
)

// ErrOutOfOrder: the leader's log store refused an entry started after
// another (Replica.Start's after) that Raft did not store; the leader
// steps down and the entry fails, as every later one of its term.
var ErrOutOfOrder = errors.New("replication: entry would follow one that was not stored")

// ErrNotReady: the replica leads but has not applied the entries of
// earlier terms yet (Replica.Leading); the Cause of a NotLeaderError
// naming this replica. A retry soon succeeds.
var ErrNotReady = errors.New("replication: leader not ready: applying earlier entries")

// NotLeaderError says who leads instead. errors.Is(err, ErrNotLeader) holds.
type NotLeaderError struct {
	Group    string
	LeaderID raft.ServerID      // empty when unknown
	Leader   raft.ServerAddress // empty when unknown
	// Cause is Raft's error: raft.ErrNotLeader when the replica refused
	// before appending (a retry is safe), raft.ErrLeadershipLost when the
	// outcome is unknown.
	Cause error
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return fmt.Sprintf("replication: group %s: not the leader (%v); no leader known", e.Group, e.Cause)
	}
	return fmt.Sprintf("replication: group %s: not the leader (%v); leader is %s at %s", e.Group, e.Cause, e.LeaderID, e.Leader)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Unwrap returns Raft's error.
func (e *NotLeaderError) Unwrap() error { return e.Cause }

// ReplicaConfig configures this node's replica of one partition group.
type ReplicaConfig struct {
	Group  string        // group id, "p/<topic>/<partition>"
	NodeID raft.ServerID // this node
	// Log is the partition's log, opened with ManualHighWatermark. The
	// caller closes it after Replica.Close.
	Log *log.Log
	// DB is the node's Pebble DB, holding the group's term and vote.
	DB *pebble.DB
	// SnapshotDir holds the group's snapshots (metadata only).
	SnapshotDir string
	// Stream is the group's stream layer on the node's transport.Mux: it
	// carries the group's snapshots and segment copies.
	Stream *transport.Group
	// RPC is the node's raftrpc.Hub: it carries every other Raft RPC of
	// the group, over links shared with the node's other groups.
	RPC *raftrpc.Hub
	// Raft, when set, is copied for timeouts and thresholds; LocalID,
	// Logger, NotifyCh and a TrailingLogs below 1 are overridden. Nil:
	// Raft's defaults with CommitTimeout DefaultCommitTimeout and
	// LeaderLeaseTimeout HeartbeatTimeout (heartbeat.go says why). While
	// the replica leads, its HeartbeatTimeout is longer (heartbeat.go).
	Raft *raft.Config
	// Logger; nil: hclog's default.
	Logger hclog.Logger
	// OnApply, when set, is called with the header and bytes of every
	// applied batch, in log order, on every replica (also when Raft
	// replays entries after a restart), before the high watermark moves
	// past it.
	OnApply func(batch.Info, []byte)
	// OnRestore, when set, is called after a snapshot is restored (see
	// PartitionFSM): the batches it covers were never applied here.
	OnRestore func()
	// Counts, when set, counts this replica's sleeps and wakes too (the
	// node's totals, for its metrics).
	Counts *SleepCounts
	// cache is the node's entry cache (entrycache.go); nil: one of the
	// replica's own.
	cache *entryCache
}

// Replica is this node's replica of a partition's Raft group.
type Replica struct {
	group  string
	log    *log.Log
	store  *LogStore
	fsm    *PartitionFSM
	stream *copyStream
	trans  *raftrpc.Transport
	snaps  *snapshotStore
	logger hclog.Logger

	// raft is the group's running Raft instance, or the last one, shut
	// down, while the replica sleeps (sleep.go): every use loads it once.
	raft atomic.Pointer[instance]
	// What a wake needs to start Raft again: the configuration it was
	// opened with and the stores (sleep.go).
	rc     raft.Config
	stable raft.StableStore
	sleep  sleepState
	counts *SleepCounts // the node's (or the replica's own)

	// copyCtx ends at Close: it aborts a catch-up in progress, which
	// Raft's shutdown waits for.
	copyCtx    context.Context
	copyCancel context.CancelFunc
	copied     atomic.Int64 // bytes copied by catch-ups
	catchUps   atomic.Int64

	// ready proves, for a term this replica leads, that every entry of
	// earlier terms is applied (see Leading).
	ready atomic.Pointer[readiness]
	// reads proves leadership for linearizable reads (ConfirmRead).
	reads *ReadIndex

	// The reloadable configuration as a follower and as a leader, and
	// whether the leader one was loaded last (heartbeat.go).
	followerCfg, leaderCfg raft.ReloadableConfig
	leaderHB               atomic.Bool
	// notify is Raft's NotifyCh, read by the role watcher (followRole)
	// while an instance runs; role is that watcher, nil while the replica
	// sleeps or once closed. Guarded by sleep.mu.
	notify chan bool
	role   *roleWatch
}

// snapshotStore is the partition's raft.SnapshotStore, remembering the
// metadata of the snapshot Raft opened last: Raft opens a snapshot just
// before restoring the state machine from it, and the state machine needs
// its index to catch up.
type snapshotStore struct {
	raft.SnapshotStore
	opened atomic.Pointer[raft.SnapshotMeta]
	// last is the index of the newest snapshot there is (or being made):
	// sleepLocked snapshots a replica only far enough past it. Raft lists
	// the snapshots as it starts (List) and creates the next ones (Create).
	last atomic.Uint64
}

func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	metas, err := s.SnapshotStore.List()
	if err == nil && len(metas) > 0 && metas[0].Index > s.last.Load() {
		s.last.Store(metas[0].Index) // newest first
	}
	return metas, err
}

func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err == nil && index > s.last.Load() {
		s.last.Store(index) // only Raft's snapshot goroutine creates
	}
	return sink, err
}

func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err == nil {
		s.opened.Store(meta)
	}
	return meta, rc, err
}

// openedAt is the index and term of the snapshot Raft opened last (0, 0:
// none).
func (s *snapshotStore) openedAt() (index, term uint64) {
	if m := s.opened.Load(); m != nil {
		return m.Index, m.Term
	}
	return 0, 0
}

// OpenReplica starts the replica. A new group must then be bootstrapped
// on one replica (Bootstrap) or be added to an existing configuration.
func OpenReplica(cfg ReplicaConfig) (*Replica, error) {
	if cfg.Log == nil || cfg.DB == nil || cfg.Stream == nil || cfg.RPC == nil || cfg.SnapshotDir == "" || cfg.NodeID == "" || cfg.Group == "" {
		return nil, errors.New("replication: ReplicaConfig needs Group, NodeID, Log, DB, SnapshotDir, Stream and RPC")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.Default()
	}
	logger = logger.Named(cfg.Group)
	rc := RaftConfig(cfg.Raft)
	if cfg.Raft == nil {
		rc.LeaderLeaseTimeout = rc.HeartbeatTimeout
	}
	rc.LocalID = cfg.NodeID
	rc.Logger = logger
	notify := make(chan bool, 1)
	rc.NotifyCh = notify
	// DeleteRange tells compaction from suffix truncation by the range:
	// a compaction must never reach the last index.
	rc.TrailingLogs = max(rc.TrailingLogs, 1)
	// A buffered apply channel lets the leader take every pipelined
	// entry at once (one StoreLogs, one fsync) and Start return at once.
	rc.BatchApplyCh = true
	// Only logd shuts an instance down (await.go): a leader that removes
	// itself from the group steps down, and the replica is closed when the
	// placement no longer has it.
	rc.ShutdownOnRemove = false

	if err := os.MkdirAll(cfg.SnapshotDir, 0o755); err != nil {
		return nil, fmt.Errorf("replication: %s: %w", cfg.Group, err)
	}
	fsnaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.SnapshotDir, 2, logger)
	if err != nil {
		return nil, fmt.Errorf("replication: %s: snapshot store: %w", cfg.Group, err)
	}
	p := &Replica{group: cfg.Group, log: cfg.Log, snaps: &snapshotStore{SnapshotStore: fsnaps}, logger: logger, counts: cfg.Counts, notify: notify}
	if p.counts == nil {
		p.counts = &SleepCounts{}
	}
	p.copyCtx, p.copyCancel = context.WithCancel(context.Background())
	p.store = NewLogStore(cfg.Log)
	cache := cfg.cache
	if cache == nil {
		cache = newEntryCache(DefaultEntryCacheBytes)
	}
	p.store.useCache(cache)
	p.fsm = NewPartitionFSM(cfg.Log, p.store)
	p.fsm.onApply = cfg.OnApply
	p.fsm.onRestore = cfg.OnRestore
	p.fsm.snapshotAt = p.snaps.openedAt
	p.fsm.catchUp = p.catchUp
	p.trans, err = cfg.RPC.Group(cfg.Group, cfg.Stream)
	if err != nil {
		p.copyCancel()
		return nil, fmt.Errorf("replication: %s: %w", cfg.Group, err)
	}
	p.stream = newCopyStream(cfg.Stream, func(c net.Conn) { serveCopy(c, cfg.Log, logger) }, p.trans.ServeSnapshot)
	p.stable = NewStableStore(cfg.DB, cfg.Group)
	p.rc = *rc
	p.store.onMarker = p.markerStored
	r, err := newRaft(rc, p.fsm, p.store, p.stable, p.snaps, raftTransport{p.trans})
	if err != nil {
		p.copyCancel()
		p.trans.Close()
		p.stream.Close()
		p.stream.wait()
		return nil, fmt.Errorf("replication: %s: start raft: %w", cfg.Group, err)
	}
	p.followerCfg, p.leaderCfg = roleConfigs(rc)
	p.reads = newReadIndex(func(d time.Duration) error {
		in := p.inst()
		return in.await(in.Barrier(d))
	}, ReadBarrierTimeout)
	p.run(r)
	p.startRole()
	p.Touch()
	return p, nil
}

// Bootstrap makes servers the group's first configuration, if this replica
// has no state yet (raft.ErrCantBootstrap otherwise).
func (p *Replica) Bootstrap(servers []raft.Server) error {
	return p.r().BootstrapCluster(raft.Configuration{Servers: servers}).Error()
}

// Group is the group id.
func (p *Replica) Group() string { return p.group }

// Raft exposes the group's Raft instance to this package's tests and
// harness (clustertest); other packages use the methods of control.go and
// membership.go instead.
func (p *Replica) Raft() *raft.Raft { return p.r() }

// r is the group's Raft instance now (shut down while the replica sleeps).
func (p *Replica) r() *raft.Raft { return p.raft.Load().Raft }

// inst is r with what waits on its futures need (await.go).
func (p *Replica) inst() *instance { return p.raft.Load() }

// run makes r the group's Raft instance.
func (p *Replica) run(r *raft.Raft) {
	p.raft.Store(newInstance(r))
	p.trans.Bind(r)
	p.store.SetAppliedIndex(r.AppliedIndex)
}

// Log is the partition's log.
func (p *Replica) Log() *log.Log { return p.log }

// Append replicates one record batch and returns its offsets once a
// quorum has stored it and it is applied here (acks=all): Start and Wait.
//
// When ctx ends first, or leadership is lost during the append (a
// NotLeaderError whose Cause is raft.ErrLeadershipLost), the outcome is
// unknown: the entry may still commit, so a retry must go through the
// idempotent producer. errors.Is(err, ErrOutcomeUnknown) holds for the
// former.
func (p *Replica) Append(ctx context.Context, b []byte) (ApplyResult, error) {
	c, err := checkAppend(b)
	if err != nil {
		return ApplyResult{}, err
	}
	w, err := p.Start(c, false, nil)
	if err != nil {
		return ApplyResult{}, err
	}
	return w.Wait(ctx)
}

// Write is a batch entry on its way through Raft (Replica.Start).
type Write struct {
	p      *Replica
	entry  *startedEntry
	stored <-chan storedResult // leaderOnly: the leader's log stored it
	done   chan struct{}       // closed once res and err are final
	res    ApplyResult
	err    error
}

// Start hands one validated record batch (batch.Validate) to Raft and
// returns without waiting for it to be stored: Raft orders entries in the order Start is called (its
// apply channel), so a caller that serializes its Starts gets its batches
// into the log in that order, while they share the leader's fsyncs and
// AppendEntries. Start takes b over: it is modified in place (base offset,
// leader epoch) and read by the state machine when the entry is applied,
// so the caller must not reuse it. The batch is not checked again: this
// leader's log store takes c as it is (the check before Raft is the
// caller's, once: once committed, every replica stores the batch, and none
// could refuse it then), where a follower checks the bytes it receives.
//
// Start blocks until Raft takes the entry (never long: the apply channel
// is buffered and drained in every Raft state), with no timeout: an entry
// refused after a later one of the same caller was taken would break that
// caller's order. leaderOnly makes Wait answer once the leader's own log
// stored the batch durably (acks=leader) rather than once a quorum stored
// it and it is applied here (acks=all).
//
// after, when not nil, is the caller's previous write, still under way:
// Raft may refuse an entry (a leadership transfer in progress) and take
// the next one when the transfer failed, in the same term, so the log
// store refuses to store b unless after's entry was stored (the leader
// then steps down, failing b and the entries after it).
func (p *Replica) Start(c batch.Checked, leaderOnly bool, after *Write) (*Write, error) {
	if !c.Validated() {
		return nil, fmt.Errorf("%w: its records were not validated (batch.Validate)", ErrNotBatch)
	}
	b := c.Bytes()
	w := &Write{p: p, done: make(chan struct{})}
	var prev *startedEntry
	if after != nil {
		prev = after.entry
	}
	// The gate keeps a Hibernate from stopping Raft between this check
	// and the Apply (sleep.go).
	p.sleep.gate.RLock()
	if p.Asleep() {
		p.sleep.gate.RUnlock()
		return nil, fmt.Errorf("replication: %s: append: %w", p.group, ErrAsleep)
	}
	p.sleep.starts.Add(1)
	w.entry = p.store.startEntry(c, prev)
	var stored chan storedResult
	if leaderOnly {
		stored = p.store.awaitStored(b)
		w.stored = stored
	}
	in := p.inst()
	f := in.Apply(b, 0)
	p.sleep.gate.RUnlock()
	in.watch(f, func(err error) {
		w.res, w.err = p.applied(f, err)
		close(w.done)
		if stored != nil {
			p.store.forgetStored(b, stored)
		}
		w.entry.settle()
	})
	return w, nil
}

// applied returns the outcome of f, answered with err.
func (p *Replica) applied(f raft.ApplyFuture, err error) (ApplyResult, error) {
	if err != nil {
		return ApplyResult{}, p.applyError(err)
	}
	switch r := f.Response().(type) {
	case ApplyResult:
		return r, nil
	case error:
		return ApplyResult{}, r
	default:
		return ApplyResult{}, fmt.Errorf("replication: %s: unexpected apply response %T", p.group, r)
	}
}

// Wait waits for the batch's offsets: once applied, or with leaderOnly
// once the leader's log stored it. When ctx ends first the outcome is
// unknown (ErrOutcomeUnknown): the entry may still commit.
func (w *Write) Wait(ctx context.Context) (ApplyResult, error) {
	select {
	case r := <-w.stored: // nil unless leaderOnly
		return r.r, r.err
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
		return ApplyResult{}, fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, w.p.group, ctx.Err())
	}
}

// Done is closed when the outcome is final: applied here, or failed.
func (w *Write) Done() <-chan struct{} { return w.done }

// Result is the final outcome; it waits for Done.
func (w *Write) Result() (ApplyResult, error) {
	<-w.done
	return w.res, w.err
}

// Leading returns the Raft term in which this replica leads, once its
// state machine has applied every entry of the earlier terms (a Barrier
// in this term returned; the first call of a term waits for it, up to
// ctx), so that state kept with OnApply (the producers' dedup state) is
// whole; a NotLeaderError otherwise, whose Cause is ErrNotReady when the
// replica leads but has not applied them yet. Raft's AppliedIndex is no
// such proof: it moves when entries are handed to the state machine,
// before they are applied.
func (p *Replica) Leading(ctx context.Context) (uint64, error) {
	rf := p.inst() // one instance throughout (a sleep and a wake start another)
	if rf.State() != raft.Leader {
		return 0, p.applyError(raft.ErrNotLeader)
	}
	term := rf.CurrentTerm()
	r := p.ready.Load()
	if r == nil || r.term != term || r.failed() {
		nr := &readiness{term: term, done: make(chan struct{})}
		if p.ready.CompareAndSwap(r, nr) {
			go func() {
				nr.ok = rf.await(rf.Barrier(0)) == nil
				close(nr.done)
			}()
		}
		r = p.ready.Load()
	}
	select {
	case <-r.done:
		if r.ok && r.term == term {
			return term, nil
		}
	case <-ctx.Done():
	}
	return 0, p.applyError(ErrNotReady)
}

// readiness is a leader's proof, for its term, that every earlier entry
// is applied: a Barrier, ok once done.
type readiness struct {
	term uint64
	done chan struct{}
	ok   bool // set before done is closed
}

func (r *readiness) failed() bool {
	select {
	case <-r.done:
		return !r.ok
	default:
		return false
	}
}

// TrimLimit is the offset below which retention may delete this replica's
// segments (log.DeleteSegmentsBefore) without removing an entry Raft
// still needs: every deleted segment must end at or below the index of the
// latest durable snapshot, because on restart Raft restores that snapshot
// and replays every entry after it (a missing one makes it panic). It is
// the base offset of the oldest segment holding an entry after the
// snapshot, or the log start offset when there is no snapshot. Trimming by
// offset alone is not enough: a closed segment can end with configuration
// or no-op entries past the snapshot that own no offset.
func (p *Replica) TrimLimit() (int64, error) {
	metas, err := p.snaps.List()
	if err != nil {
		return 0, fmt.Errorf("replication: %s: list snapshots: %w", p.group, err)
	}
	segs := p.log.Segments()
	if len(segs) == 0 {
		return p.log.StartOffset(), nil
	}
	limit := segs[0].BaseOffset
	if len(metas) == 0 {
		return limit, nil
	}
	snapIndex := metas[0].Index // newest first
	// Segment j-1 ends at index segs[j].FirstIndex-1.
	for j := 1; j < len(segs) && segs[j].FirstIndex <= snapIndex+1; j++ {
		limit = segs[j].BaseOffset
	}
	return limit, nil
}

// AppendLeader replicates one record batch and returns its offsets once
// the leader's own log has stored it durably, without waiting for a quorum
// (acks=leader): Start and Wait. The batch is committed later, or lost
// with this leader if it fails before a quorum stores it; readers see it
// only once committed. AppendLeader takes b over, as Append does.
func (p *Replica) AppendLeader(ctx context.Context, b []byte) (ApplyResult, error) {
	c, err := checkAppend(b)
	if err != nil {
		return ApplyResult{}, err
	}
	w, err := p.Start(c, true, nil)
	if err != nil {
		return ApplyResult{}, err
	}
	return w.Wait(ctx)
}

// checkAppend validates a batch before it enters Raft (Append,
// AppendLeader): once committed, every replica stores it, and none could
// refuse it then.
func checkAppend(b []byte) (batch.Checked, error) {
	c, err := batch.Validate(b)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrNotBatch, err)
	}
	return c, nil
}

func (p *Replica) applyError(err error) error {
	if errors.Is(err, raft.ErrRaftShutdown) && p.Asleep() {
		return fmt.Errorf("replication: %s: %w", p.group, ErrAsleep)
	}
	if nl := AsNotLeader(p.group, p.r(), err); nl != nil {
		return nl
	}
	if errors.Is(err, ErrNotReady) {
		addr, id := p.r().LeaderWithID()
		return &NotLeaderError{Group: p.group, LeaderID: id, Leader: addr, Cause: err}
	}
	return fmt.Errorf("replication: %s: append: %w", p.group, err)
}

// Close stops the replica's Raft and its transport, aborting a catch-up
// in progress and waiting for the copies it serves. The log stays open.
func (p *Replica) Close() error {
	p.copyCancel()
	p.stopTimers()
	p.sleep.mu.Lock()
	p.sleep.closed = true
	err := p.inst().shutdown()
	p.stopRole()
	p.sleep.mu.Unlock()
	if cerr := p.trans.Close(); err == nil {
		err = cerr
	}
	if cerr := p.stream.Close(); err == nil {
		err = cerr
	}
	p.stream.wait()
	p.store.cache.drop()
	return err
}

// newRaft is raft.NewRaft with its panic on a log entry it cannot read
// turned into an error. hashicorp/raft v1.8.0 panics when GetLog fails
// while it scans the log for configuration entries, before it starts any
// goroutine: a disk error (EIO) reading one replica's segment would
// otherwise stop the whole node, every other replica on it included (CI's
// in-process torture met it, a crashed disk under a replica being
// opened). Only an error is recovered, not a runtime error: any other
// panic is a bug and goes on.
func newRaft(conf *raft.Config, fsm raft.FSM, logs raft.LogStore, stable raft.StableStore,
	snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		e, ok := v.(error)
		if _, bug := v.(runtime.Error); !ok || bug {
			panic(v)
		}
		r, err = nil, fmt.Errorf("read the log: %w", e)
	}()
	return raft.NewRaft(conf, fsm, logs, stable, snaps, trans)
}

// catchUp copies the leader's segments through a snapshot this replica's
// log cannot continue at (see PartitionFSM.Restore). It runs in Raft's
// state machine goroutine while Raft waits for the restore: the leader's
// InstallSnapshot RPC may time out first (10s), in which case the leader
// retries and the second install finds the log caught up.
func (p *Replica) catchUp(s PartitionSnapshot, index uint64) error {
	leader, _ := p.r().LeaderWithID()
	if leader == "" {
		return errNoLeader
	}
	t0 := time.Now()
	res, err := fetchSegments(p.copyCtx, p.stream, leader, p.log, index, s.HighWatermark)
	if err != nil {
		p.logger.Warn("catch-up by segment copy failed", "leader", leader, "index", index, "error", err)
		return err
	}
	p.catchUps.Add(1)
	p.copied.Add(res.Bytes)
	p.logger.Info("caught up by segment copy", "leader", leader, "index", index, "offset", s.HighWatermark,
		"segments", res.Segments, "bytes", res.Bytes, "duration", time.Since(t0))
	return nil
}

// CatchUps reports how many times this replica caught up by segment copy
// since it was opened, and the bytes it copied.
func (p *Replica) CatchUps() (count, bytes int64) { return p.catchUps.Load(), p.copied.Load() }

// DeleteRecords moves the partition's log start offset to offset (-1: the
// high watermark) on every replica, as Kafka's DeleteRecords: it
// replicates a command entry and returns the log start once it is applied
// here. Records below it are never read again; their bytes go when
// retention deletes their segments whole. An offset at or below the log
// start changes nothing and appends nothing. Called on the leader; a
// replica that does not lead answers a *NotLeaderError, an offset above
// the high watermark a *log.OutOfRangeError. When ctx ends first the
// outcome is unknown (ErrOutcomeUnknown).
func (p *Replica) DeleteRecords(ctx context.Context, offset int64) (int64, error) {
	if _, err := p.Leading(ctx); err != nil {
		return 0, err
	}
	start, hw := p.log.StartOffset(), p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, &log.OutOfRangeError{Offset: offset, StartOffset: start, HighWatermark: hw}
	}
	if offset <= start {
		return start, nil
	}
	res, err := p.replicate(ctx, encodeDeleteRecords(offset))
	if err != nil {
		return 0, err
	}
	switch r := res.(type) {
	case int64:
		return r, nil
	case error:
		return 0, r
	}
	return 0, fmt.Errorf("replication: %s: unexpected apply response %T", p.group, res)
}

package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/replication"
)

// Group is this node's replica of the metadata group.
type Group struct {
	FSM      *FSM
	raft     *raft.Raft
	trans    *replication.NetworkTransport
	store    *replication.PebbleLogStore
	reads    *replication.ReadIndex
	existing bool
	// down is closed once Raft has shut down (Close): every wait on a
	// Raft future ends then (replication.Await).
	down chan struct{}
	// publishing ends publishLoop, which closes published when it has
	// returned.
	publishing context.Context
	stop       context.CancelFunc
	published  chan struct{}
}

// Open starts this node's replica of the metadata group on n's Raft port.
func Open(n *replication.Node) (*Group, error) {
	cfg := n.Config()
	stream, err := n.Stream(replication.MetaGroup)
	if err != nil {
		return nil, err
	}
	logger := n.Logger().Named(replication.MetaGroup)
	rc := replication.RaftConfig(cfg.Raft)
	rc.LocalID = cfg.ID
	rc.Logger = logger
	rc.SnapshotThreshold = 1024
	dir := filepath.Join(cfg.DataDir, "raft", replication.MetaGroup, "snapshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		stream.Close()
		return nil, fmt.Errorf("meta: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger)
	if err != nil {
		stream.Close()
		return nil, fmt.Errorf("meta: snapshot store: %w", err)
	}
	fsm, err := NewFSM()
	if err != nil {
		stream.Close()
		return nil, err
	}
	g := &Group{FSM: fsm, store: replication.NewPebbleLogStore(cfg.DB, replication.MetaGroup)}
	g.trans = replication.NewNetworkTransport(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: logger,
	})
	stable := replication.NewStableStore(cfg.DB, replication.MetaGroup)
	g.existing, err = raft.HasExistingState(g.store, stable, snaps)
	if err != nil {
		g.trans.Close()
		fsm.Close()
		return nil, fmt.Errorf("meta: %w", err)
	}
	r, err := raft.NewRaft(rc, fsm, g.store, stable, snaps, g.trans)
	if err != nil {
		g.trans.Close()
		fsm.Close()
		return nil, fmt.Errorf("meta: start raft: %w", err)
	}
	g.raft = r
	g.down = make(chan struct{})
	g.reads = replication.NewReadIndex(r, g.down, replication.ReadBarrierTimeout)
	g.trans.Bind(r)
	g.publishing, g.stop = context.WithCancel(context.Background())
	g.published = make(chan struct{})
	go g.publishLoop()
	return g, nil
}

// Publishing a change. hashicorp/raft tells followers the
// commit index only in the appends it sends: at once when there are new
// entries, else every CommitTimeout. At Raft's default of 50 ms those
// empty commit notices were two thirds of the group's RPCs and most of an
// idle cluster's CPU, so the group runs with
// replication.DefaultCommitTimeout (1 s), as partitions do; it keeps
// Raft's heartbeats and lease. A follower would then apply a change up to
// 2 s after it committed: a new topic's replicas would start late on the
// other nodes (and CreateTopic, which waits for their leaders, return
// late), a user just created would be refused by another node, a
// partition moved would keep serving there.
//
// So after a command commits, the leader starts a barrier (the read
// index's, shared with reads: one runs at a time, and the commands and
// reads that arrive meanwhile share the next): the barrier's append
// carries the new commit index to every follower at once, and a follower
// applies the change one round trip after it committed. The consumer
// groups' commands (offset commits, generations) are not published: only
// the leader reads them, behind a read barrier, and a barrier after each
// would double the group's writes under a committing consumer.
//
// A new leader commits the entries of earlier terms with its first entry
// (Raft's no-op), whose commit its followers would likewise learn late. It
// runs two barriers, one after the other: the first commits after the
// no-op, and the append of the second carries that commit.

// publishLoop runs the two barriers of a new leader each time Raft reports
// that this replica leads, until publishing ends. Raft's LeaderCh never
// holds Raft up (it keeps the last change), so the loop may wait on the
// barriers.
func (g *Group) publishLoop() {
	defer close(g.published)
	for {
		select {
		case <-g.publishing.Done():
			return
		case leads := <-g.raft.LeaderCh():
			// An error is a lost leadership or a shutdown: the next leader
			// publishes what it commits.
			if leads && g.reads.Confirm(g.publishing) == nil {
				_ = g.reads.Confirm(g.publishing)
			}
		}
	}
}

// actedOnByFollowers reports whether a follower acts on what a command of
// op changes (the replicas it runs, the users it authenticates, the
// topics it serves), so that the leader publishes it at once. The
// consumer groups' and transactions' state is read only on the leader, after a read barrier
// (broker.currentMeta).
func (op Op) actedOnByFollowers() bool {
	switch op {
	case OpCommitOffsets, OpDeleteGroup, OpDeleteOffsets, OpGroupGeneration, OpGroupState, OpTxnState:
		return false
	}
	return true
}

// HadState reports whether this replica had Raft state when it opened
// (it was bootstrapped or had joined a cluster before).
func (g *Group) HadState() bool { return g.existing }

// Bootstrap starts a new cluster of this one node, unless it has state.
func (g *Group) Bootstrap(id raft.ServerID, addr raft.ServerAddress) error {
	err := g.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: id, Address: addr}}}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// IsLeader reports whether this replica leads the group.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Term is the Raft term this node is in.
func (g *Group) Term() uint64 { return g.raft.CurrentTerm() }

// Leader is the leader's node id, "" when unknown.
func (g *Group) Leader() string {
	_, id := g.raft.LeaderWithID()
	return string(id)
}

// Apply replicates a command (on the leader) and returns once this node
// applied it. A non-leader answers a *replication.NotLeaderError.
func (g *Group) Apply(ctx context.Context, c Command) error {
	// A command whose caller already gave up is not proposed: proposed now
	// (after a barrier, or a forward the network held up), it would be
	// applied after the write the caller sent next, and undo it (a
	// committed offset going back).
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("meta: not proposed, the request ended first: %w", err)
	}
	if c.TimeMs == 0 {
		c.TimeMs = time.Now().UnixMilli()
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	f := g.raft.Apply(b, timeout)
	if err := replication.Await(f, g.down); err != nil {
		return g.raftError(err)
	}
	if c.Op.actedOnByFollowers() {
		g.reads.Start()
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

func (g *Group) raftError(err error) error {
	if nl := replication.AsNotLeader(replication.MetaGroup, g.raft, err); nl != nil {
		return nl
	}
	return fmt.Errorf("meta: %w", err)
}

// AddVoter adds a node to the group (on the leader).
func (g *Group) AddVoter(id raft.ServerID, addr raft.ServerAddress) error {
	if err := replication.Await(g.raft.AddVoter(id, addr, 0, 30*time.Second), g.down); err != nil {
		return g.raftError(err)
	}
	return nil
}

// IsServer reports whether id is in the group's configuration, as this
// replica knows it.
func (g *Group) IsServer(id raft.ServerID) (bool, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, g.raftError(err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// RemoveServer removes a node from the group (on the leader).
func (g *Group) RemoveServer(id raft.ServerID) error {
	if err := replication.Await(g.raft.RemoveServer(id, 0, 30*time.Second), g.down); err != nil {
		return g.raftError(err)
	}
	return nil
}

// Barrier waits until this replica (the leader) has applied everything
// committed before, so its state is current.
func (g *Group) Barrier(timeout time.Duration) error {
	if err := replication.Await(g.raft.Barrier(timeout), g.down); err != nil {
		return g.raftError(err)
	}
	return nil
}

// ConfirmRead makes a read of the metadata served by this replica
// linearizable: it returns once a barrier started after the call committed
// and was applied here (replication.ReadIndex). A replica that does not,
// or no longer, leads answers a *replication.NotLeaderError.
func (g *Group) ConfirmRead(ctx context.Context) error {
	if err := g.reads.Confirm(ctx); err != nil {
		return g.raftError(err)
	}
	return nil
}

// Close stops the replica.
func (g *Group) Close() error {
	g.stop()
	<-g.published
	err := g.raft.Shutdown().Error()
	select {
	case <-g.down:
	default:
		close(g.down)
	}
	errs := []error{err, g.trans.Close(), g.FSM.Close()}
	return errors.Join(errs...)
}

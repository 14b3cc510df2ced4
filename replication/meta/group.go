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
}

// Open starts this node's replica of the metadata group on n's Raft port.
func Open(n *replication.Node) (*Group, error) {
	cfg := n.Config()
	stream, err := n.Stream(replication.MetaGroup)
	if err != nil {
		return nil, err
	}
	logger := n.Logger().Named(replication.MetaGroup)
	rc := raft.DefaultConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
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
	g.reads = replication.NewReadIndex(r, replication.ReadBarrierTimeout)
	g.trans.Bind(r)
	return g, nil
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
	if err := f.Error(); err != nil {
		return g.raftError(err)
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
	if err := g.raft.AddVoter(id, addr, 0, 30*time.Second).Error(); err != nil {
		return g.raftError(err)
	}
	return nil
}

// RemoveServer removes a node from the group (on the leader).
func (g *Group) RemoveServer(id raft.ServerID) error {
	if err := g.raft.RemoveServer(id, 0, 30*time.Second).Error(); err != nil {
		return g.raftError(err)
	}
	return nil
}

// Barrier waits until this replica (the leader) has applied everything
// committed before, so its state is current.
func (g *Group) Barrier(timeout time.Duration) error {
	if err := g.raft.Barrier(timeout).Error(); err != nil {
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
	err := g.raft.Shutdown().Error()
	errs := []error{err, g.trans.Close(), g.FSM.Close()}
	return errors.Join(errs...)
}

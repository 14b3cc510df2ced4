package replication

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/log"
	"github.com/logd/logd/replication/raftrpc"
	"github.com/logd/logd/replication/transport"
)

// MetaGroup is the metadata group's id.
const MetaGroup = "meta"

// PartitionGroup is the id of a partition's group: "p/<topic>/<partition>".
// Topic names hold no '/', so ids of distinct partitions never prefix each
// other (the stable store's key prefixes rely on it).
func PartitionGroup(topic string, partition int) string {
	return "p/" + topic + "/" + strconv.Itoa(partition)
}

// groupDir names a group's directory: its id with '/' as '~', a character
// no topic name holds, so distinct groups get distinct directories and no
// id climbs out of the data directory.
func groupDir(group string) string { return strings.ReplaceAll(group, "/", "~") }

// NodeConfig configures the replication side of a logd node.
type NodeConfig struct {
	ID raft.ServerID
	// Listener is the node's one Raft port; the Node owns it.
	Listener net.Listener
	// Advertise is the Raft address peers dial; nil: the listener's.
	Advertise net.Addr
	// Dial overrides TCP (the test harness routes through faultnet).
	Dial func(ctx context.Context, address string) (net.Conn, error)
	// DataDir holds each group's snapshots, in raft/<group dir>/snapshots.
	DataDir string
	// DB is the node's Pebble DB (terms, votes, the metadata log). The
	// caller closes it after Node.Close.
	DB *pebble.DB
	// Raft is the base Raft configuration of every group; nil: defaults.
	Raft *raft.Config
	// Logger; nil: hclog's default.
	Logger hclog.Logger
	// ClusterID is the node's cluster's id, checked on every Raft
	// connection (package transport); "": none yet (SetClusterID).
	ClusterID string
}

// Node runs this node's replicas of every group over one Raft port.
type Node struct {
	cfg NodeConfig
	mux *transport.Mux
	rpc *raftrpc.Hub // the partition groups' RPCs
	log hclog.Logger

	mu     sync.Mutex
	parts  map[string]*Replica
	closed bool
	// opening holds the groups OpenReplica is starting, outside mu; opens
	// counts them for Close.
	opening map[string]bool
	opens   sync.WaitGroup
	counts  SleepCounts // of every replica opened here
	cache   *entryCache // every replica's entries stored last

	// spreadMu guards failedMoves: the groups whose last leadership
	// transfer failed, skipped by SpreadLeaders until their time.
	spreadMu    sync.Mutex
	failedMoves map[string]failedMove
}

// failedMove is a group whose leadership transfer failed: it is not tried
// again before next, and each failure doubles the wait.
type failedMove struct {
	next time.Time
	wait time.Duration
}

// Waits between leadership transfers of a group that failed: while Raft
// transfers leadership it refuses every write (up to an election
// timeout), so a replica that cannot catch up must not be offered the
// leadership every spreading round.
const (
	firstMoveRetry = 30 * time.Second
	maxMoveRetry   = 10 * time.Minute
)

// NewNode starts the node's Raft port. Groups are opened with
// OpenReplica.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.ID == "" || cfg.Listener == nil || cfg.DB == nil || cfg.DataDir == "" {
		return nil, errors.New("replication: NodeConfig needs ID, Listener, DB and DataDir")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	mux, err := transport.New(transport.Config{Listener: cfg.Listener, Advertise: cfg.Advertise, Dial: cfg.Dial, Logger: cfg.Logger,
		ClusterID: cfg.ClusterID, NodeID: string(cfg.ID)})
	if err != nil {
		return nil, err
	}
	links, err := mux.DirectGroup(raftrpc.ChannelID)
	if err != nil {
		mux.Close()
		return nil, err
	}
	hub, err := raftrpc.NewHub(raftrpc.Config{Stream: links, Logger: cfg.Logger})
	if err != nil {
		mux.Close()
		return nil, err
	}
	return &Node{cfg: cfg, mux: mux, rpc: hub, log: cfg.Logger, parts: map[string]*Replica{}, opening: map[string]bool{},
		cache: newEntryCache(DefaultEntryCacheBytes)}, nil
}

// Awake is how many of the node's open replicas run their Raft instance
// (are not asleep).
func (n *Node) Awake() int64 {
	n.mu.Lock() // no copy, no sort: a burst of uses asks often (cluster's wake bound)
	defer n.mu.Unlock()
	var awake int64
	for _, p := range n.parts {
		if !p.Asleep() {
			awake++
		}
	}
	return awake
}

// SleepCounts returns how many times the node's replicas fell asleep and
// woke (sleep.go), since the node started.
func (n *Node) SleepCounts() (sleeps, wakes int64) {
	return n.counts.Sleeps.Load(), n.counts.Wakes.Load()
}

// ID is the node's id.
func (n *Node) ID() raft.ServerID { return n.cfg.ID }

// Addr is the node's Raft address.
func (n *Node) Addr() raft.ServerAddress { return raft.ServerAddress(n.mux.Addr().String()) }

// ReplicaOptions are the per-replica options of OpenReplica.
type ReplicaOptions struct {
	// OnApply: see ReplicaConfig.OnApply.
	OnApply func(batch.Info, []byte)
	// OnRestore: see ReplicaConfig.OnRestore.
	OnRestore func()
}

// OpenReplica starts this node's replica of a partition group over l
// (opened with ManualHighWatermark; the caller closes it after the replica
// is closed), with per-replica options (the zero ReplicaOptions for none).
// The group is reserved under the node's mutex and its Raft started outside
// it (a few milliseconds of disk reads each): a reconcile opens thousands
// of replicas at once, and every lookup of a replica (Replica, one per
// produce and fetch) takes that mutex.
func (n *Node) OpenReplica(group string, l *log.Log, opts ReplicaOptions) (*Replica, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("replication: node closed")
	}
	if _, ok := n.parts[group]; ok || n.opening[group] {
		n.mu.Unlock()
		return nil, fmt.Errorf("replication: group %s already open", group)
	}
	stream, err := n.mux.Group(group)
	if err != nil {
		n.mu.Unlock()
		return nil, err
	}
	n.opening[group] = true
	n.opens.Add(1) // Close waits for it
	n.mu.Unlock()
	defer n.opens.Done()
	p, err := OpenReplica(ReplicaConfig{
		Group:       group,
		NodeID:      n.cfg.ID,
		Log:         l,
		DB:          n.cfg.DB,
		SnapshotDir: filepath.Join(n.cfg.DataDir, "raft", groupDir(group), "snapshots"),
		Stream:      stream,
		RPC:         n.rpc,
		Raft:        n.cfg.Raft,
		Logger:      n.log,
		OnApply:     opts.OnApply,
		OnRestore:   opts.OnRestore,
		Counts:      &n.counts,
		cache:       n.cache,
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.opening, group)
	switch {
	case err != nil:
		stream.Close()
		return nil, err
	case n.closed:
		p.Close()
		return nil, errors.New("replication: node closed")
	}
	p.store.SetOnStale(func() { n.restartStale(group, p, opts) })
	n.parts[group] = p
	return p, nil
}

// restartStale starts the Raft of group's replica p again on the same log:
// Raft's cached last index is stale (LogStore.SetOnStale), and only a Raft
// started again reads it from the store. Nothing is done when p was closed
// or replaced meanwhile.
func (n *Node) restartStale(group string, p *Replica, opts ReplicaOptions) {
	n.mu.Lock()
	if n.closed || n.parts[group] != p {
		n.mu.Unlock()
		return
	}
	delete(n.parts, group)
	n.mu.Unlock()
	n.log.Error("restarting the replica's Raft: a store failed after Raft removed a conflicting suffix, and Raft's last index is stale until it starts again", "group", group)
	if err := p.Close(); err != nil {
		n.log.Warn("closing the replica to restart it", "group", group, "error", err)
	}
	if _, err := n.OpenReplica(group, p.Log(), opts); err != nil {
		n.log.Error("restarting the replica's Raft failed; the cluster's reconciliation opens it again", "group", group, "error", err)
	}
}

// Stream returns the node's stream layer for a group that is not a
// partition (the metadata group); the caller closes it.
func (n *Node) Stream(group string) (raft.StreamLayer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("replication: node closed")
	}
	return n.mux.Group(group)
}

// ClusterID is the cluster id the node's Raft port sends and checks ("":
// none yet).
func (n *Node) ClusterID() string { return n.mux.ClusterID() }

// SetClusterID sets the cluster id the node's Raft port sends and checks
// from now on.
func (n *Node) SetClusterID(id string) error { return n.mux.SetClusterID(id) }

// Hello asks the node whose Raft port is at address for its cluster id and
// node id (transport.Mux.Hello).
func (n *Node) Hello(ctx context.Context, address string) (transport.Hello, error) {
	return n.mux.Hello(ctx, address)
}

// Logger is the node's logger.
func (n *Node) Logger() hclog.Logger { return n.log }

// Config is the node's configuration.
func (n *Node) Config() NodeConfig { return n.cfg }

// Replica returns the open replica of group, or nil.
func (n *Node) Replica(group string) *Replica {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.parts[group]
}

// Partitions returns the open replicas, by group id.
func (n *Node) Replicas() []*Replica {
	out := n.ReplicasUnordered()
	slices.SortFunc(out, func(a, b *Replica) int { return strings.Compare(a.group, b.group) })
	return out
}

// ReplicasUnordered returns the open replicas in no order, for a caller
// that looks at every one often: sorting 10,000 of them, four times a
// second in the hibernate loop, was 5% of a node's CPU during a burst
// over 10,000 partitions.
func (n *Node) ReplicasUnordered() []*Replica {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Replica, 0, len(n.parts))
	for _, p := range n.parts {
		out = append(out, p)
	}
	return out
}

// SpreadLeaders hands the leadership of every group this node leads to the
// group's preferred leader (placement's first replica, from preferred) when
// that is another voter of the group, and returns the groups it moved.
// Called on every node, it brings each group back to its preferred leader
// after failures moved leaders around. It stops between two groups once
// ctx is done: a transfer to a voter that is down waits Raft's
// ElectionTimeout, and a node leading hundreds of groups whose preferred
// leader is down would otherwise hold its shutdown for minutes.
func (n *Node) SpreadLeaders(ctx context.Context, preferred func(group string) (raft.ServerID, bool)) ([]string, error) {
	var moved []string
	var errs []error
	for _, p := range n.Replicas() {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		want, ok := preferred(p.group)
		if !ok || want == n.cfg.ID || p.r().State() != raft.Leader {
			continue
		}
		f := p.r().GetConfiguration()
		if err := f.Error(); err != nil {
			errs = append(errs, fmt.Errorf("replication: %s: %w", p.group, err))
			continue
		}
		for _, s := range f.Configuration().Servers {
			if s.ID != want || s.Suffrage != raft.Voter || !n.mayMove(p.group) {
				continue
			}
			err := p.TransferLeadership(s.ID, s.Address)
			n.moveDone(p.group, err)
			if err != nil {
				errs = append(errs, err)
			} else {
				moved = append(moved, p.group)
			}
		}
	}
	return moved, errors.Join(errs...)
}

// mayMove reports whether group's leadership may be transferred now.
func (n *Node) mayMove(group string) bool {
	n.spreadMu.Lock()
	defer n.spreadMu.Unlock()
	f, ok := n.failedMoves[group]
	return !ok || !time.Now().Before(f.next)
}

// moveDone records the outcome of a leadership transfer of group.
func (n *Node) moveDone(group string, err error) {
	n.spreadMu.Lock()
	defer n.spreadMu.Unlock()
	if err == nil {
		delete(n.failedMoves, group)
		return
	}
	if n.failedMoves == nil {
		n.failedMoves = map[string]failedMove{}
	}
	f := n.failedMoves[group]
	f.wait = min(max(2*f.wait, firstMoveRetry), maxMoveRetry)
	f.next = time.Now().Add(f.wait)
	n.failedMoves[group] = f
}

// CloseReplica stops the replica of group. Its log stays open.
func (n *Node) CloseReplica(group string) error {
	n.mu.Lock()
	p := n.parts[group]
	delete(n.parts, group)
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Close()
}

// DropGroup removes what a closed group left on this node: its term and
// vote and its snapshots (its log is the caller's). For a group whose
// replica left the node or whose topic was deleted; the group must not be
// open.
func (n *Node) DropGroup(group string) error {
	n.mu.Lock()
	open := n.parts[group] != nil || n.opening[group]
	n.mu.Unlock()
	if open {
		return fmt.Errorf("replication: drop group %s: still open", group)
	}
	if err := NewStableStore(n.cfg.DB, group).Drop(); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(n.cfg.DataDir, "raft", groupDir(group))); err != nil {
		return fmt.Errorf("replication: drop group %s: %w", group, err)
	}
	return nil
}

// Close stops every replica and the Raft port. Logs and the DB stay open.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	parts := n.parts
	n.parts = map[string]*Replica{}
	n.mu.Unlock()
	errs := closeAll(parts)
	n.opens.Wait() // a replica opening closes itself (OpenReplica)
	errs = append(errs, n.rpc.Close(), n.mux.Close())
	return errors.Join(errs...)
}

// closeParallel is how many replicas Node.Close closes at once. A
// replica's Raft shutdown waits for its calls in flight, up to a call
// timeout (10 s) for a peer that stopped answering: one after the other,
// a node leading a few hundred groups took minutes to stop.
// The replicas share nothing that Close takes (each has its own Raft,
// transport registration and stream group), so a few dozen at once cost
// only goroutines.
const closeParallel = 32

// closeAll closes the replicas, closeParallel at a time, and returns their
// errors. Every replica is closed: the context never ends.
func closeAll(parts map[string]*Replica) []error {
	ps := slices.Collect(maps.Values(parts))
	errs := make([]error, len(ps))
	fanout.Run(context.Background(), len(ps), closeParallel, func(_ context.Context, i int) { errs[i] = ps[i].Close() })
	return errs
}

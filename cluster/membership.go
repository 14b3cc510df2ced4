package cluster

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// registerLoop makes sure the metadata lists this node with its current
// addresses: on the first start it joins (through cfg.Join), on later
// starts (the metadata group had state) it rejoins, which updates its
// addresses and is refused if the node was removed since, or never was a
// member. It ends once they are listed, or at a refusal (see Refused).
func (c *Cluster) registerLoop(ctx context.Context, self meta.Node) {
	started := time.Now()
	rejoin := c.meta.HadState()
	for wait := time.Duration(0); ; wait = time.Second {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if c.Refused() != nil {
			return
		}
		if n, ok := c.meta.FSM.Node(c.self); ok && n.Registered(self) {
			return
		}
		err := c.register(ctx, self, rejoin)
		if err == nil {
			rejoin = true // a later try (this one's answer was lost) updates
		}
		if err == nil || errors.Is(err, errNoTarget) {
			continue
		}
		if errors.Is(err, errOther) || (rejoin && errors.Is(err, kind.ErrFailedPrecondition)) {
			c.refuse(err)
			return
		}
		if ctx.Err() == nil {
			// A join that waits for the cluster's election is routine; one
			// that keeps failing (a wrong --join) is worth a warning.
			level := slog.LevelInfo
			if time.Since(started) > 30*time.Second {
				level = slog.LevelWarn
			}
			c.logger.Log(ctx, level, "joining the cluster: retrying", "err", err)
		}
	}
}

// refuse records why the cluster refused this node, once: it stays out
// (Refused; the front-end's /readyz answers 503 with it).
func (c *Cluster) refuse(err error) {
	if c.refused.CompareAndSwap(nil, &err) {
		c.logger.Error("this node is not a member of the cluster: it stays out", "err", err)
	}
}

// register asks the metadata leader (this node, else the one it knows,
// else the one the node at cfg.Join leads to) to list self, over the peer
// channel, once that node's answer to a hello showed it is of this node's
// cluster (checkPeer).
func (c *Cluster) register(ctx context.Context, self meta.Node, rejoin bool) error {
	if c.meta.IsLeader() {
		return c.join(ctx, self, rejoin)
	}
	cctx, cancel := context.WithTimeout(ctx, peerCallTimeout)
	defer cancel()
	raftAddr := c.MetaLeader().RaftAddr
	if raftAddr == "" {
		if c.cfg.Join == "" {
			return errNoTarget // a bootstrapping node waits to be elected
		}
		var err error
		if raftAddr, err = c.raftAddrOf(cctx, c.cfg.Join); err != nil {
			return err
		}
	}
	if err := c.checkTarget(cctx, raftAddr); err != nil {
		return err
	}
	return c.peerJoin(cctx, raftAddr, self, rejoin)
}

// raftAddrOf asks the node whose API is at api for its Raft address
// (Config.JoinLookup).
func (c *Cluster) raftAddrOf(ctx context.Context, api string) (string, error) {
	if c.cfg.JoinLookup == nil {
		return api, nil
	}
	return c.cfg.JoinLookup(ctx, api)
}

// checkTarget asks the node at raftAddr for its cluster id, and checks it
// (checkPeer).
func (c *Cluster) checkTarget(ctx context.Context, raftAddr string) error {
	h, err := c.rn.Hello(ctx, raftAddr)
	if err != nil {
		return err
	}
	return c.checkPeer(h, raftAddr)
}

// checkJoinTarget checks, on a node restarted with cluster state and
// --join, that the node it was pointed at belongs to its cluster; a node
// of another cluster is refused (Refused) even when this node's own
// metadata group elected it and registration needed nobody else. It tries
// until that node answers.
func (c *Cluster) checkJoinTarget(ctx context.Context) {
	if !c.meta.HadState() || c.cfg.Join == "" {
		return
	}
	for wait := time.Duration(0); ; wait = 2 * time.Second {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		raftAddr, err := c.raftAddrOf(cctx, c.cfg.Join)
		if err == nil {
			err = c.checkTarget(cctx, raftAddr)
		}
		cancel()
		switch {
		case err == nil:
			return
		case errors.Is(err, errOther):
			c.refuse(err)
			return
		}
	}
}

// startCheckTime bounds how long a node restarted with cluster state and
// --join waits, before it serves anything, for the --join node to tell
// its cluster id.
const startCheckTime = 10 * time.Second

// checkJoinTargetAtStart is checkJoinTarget's first round, run before the
// node serves anything: a node whose data directory belongs to another
// cluster than the --join node's does not start (its own cluster's
// topics would otherwise be served to clients of the one it was pointed
// at). When the --join node does not answer within startCheckTime (the
// cluster restarts, that node is down), the node starts and
// checkJoinTarget goes on asking in the background; a refusal found then
// leaves the node up and out (Refused).
func (c *Cluster) checkJoinTargetAtStart() error {
	if !c.meta.HadState() || c.cfg.Join == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startCheckTime)
	defer cancel()
	for {
		raftAddr, err := c.raftAddrOf(ctx, c.cfg.Join)
		if err == nil {
			err = c.checkTarget(ctx, raftAddr)
		}
		if err == nil || errors.Is(err, errOther) {
			return err
		}
		select {
		case <-ctx.Done():
			c.logger.Warn("the --join node did not tell its cluster id: starting, and asking again in the background",
				"join", c.cfg.Join, "err", err)
			return nil
		case <-time.After(time.Second):
		}
	}
}

// errNoTarget: a bootstrapped node that knows no metadata leader yet.
var errNoTarget = errors.New("no metadata leader known yet: waiting for the election")

// Refused is why the cluster refused this node, or nil: it was removed
// from the cluster and came back with its old data, or its data directory
// belongs to another cluster (identity.go). A refused node stays up and
// out: it takes no part in the cluster it was pointed at.
func (c *Cluster) Refused() error {
	if p := c.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// join adds a node to the metadata group and the node list (on the
// metadata leader), or updates a member's addresses (rejoin); a rejoin of
// a removed node is refused with kind.ErrFailedPrecondition.
func (c *Cluster) join(ctx context.Context, n meta.Node, rejoin bool) error {
	c.members.Lock()
	defer c.members.Unlock()
	op := meta.OpAddNode
	if rejoin {
		op = meta.OpRejoinNode
		if c.State().Removed[n.ID] {
			return errRemoved(n.ID)
		}
		if err := c.checkMember(n.ID); err != nil {
			return err
		}
	}
	if err := c.checkJoiner(ctx, n); err != nil {
		return err
	}
	if err := c.meta.AddVoter(raft.ServerID(n.ID), raft.ServerAddress(n.RaftAddr)); err != nil {
		return err
	}
	err := c.meta.Apply(ctx, meta.Command{Op: op, Node: &n})
	if errors.Is(err, meta.ErrNodeRemoved) {
		// Removed in an entry this node had not applied at the check
		// above (it was elected since): take back the vote given.
		return errors.Join(errRemoved(n.ID), c.meta.RemoveServer(raft.ServerID(n.ID)))
	}
	return err
}

// checkMember refuses the rejoin of a node that neither the metadata nor
// the metadata group's configuration knows: one that restarted with
// cluster state of its own (another cluster's data directory).
func (c *Cluster) checkMember(id string) error {
	if _, ok := c.meta.FSM.Node(id); ok {
		return nil
	}
	voter, err := c.meta.IsServer(raft.ServerID(id))
	if err != nil || voter {
		return err
	}
	return kind.Errorf(kind.ErrFailedPrecondition, "node %q restarted with cluster state (it rejoins) but is not a member of this "+
		"cluster: its data directory belongs to another cluster: to add it to this one, start it with an empty --data-dir "+
		"and --join; otherwise point --join at a node of its own cluster", id)
}

func errRemoved(id string) error {
	return kind.Errorf(kind.ErrFailedPrecondition, "node %q was removed from the cluster (logd cluster remove-node) and cannot come back "+
		"with its old data: to add it again, empty its --data-dir and start it with --join", id)
}

// Join adds a node to the cluster, or updates the addresses of a member
// that restarted (rejoin). On the metadata leader, else *NotLeaderError.
func (c *Cluster) Join(ctx context.Context, n meta.Node, rejoin bool) error {
	if n.ID == "" || n.APIAddr == "" || n.RaftAddr == "" {
		return kind.Errorf(kind.ErrInvalidArgument, "join: node_id, api_addr and raft_addr are all needed")
	}
	if err := c.OnMetaLeader(); err != nil {
		return err
	}
	return c.RaftError(c.join(ctx, n, rejoin))
}

// IsVoter reports whether id is a voter of the metadata group, as this
// node knows its configuration.
func (c *Cluster) IsVoter(id string) (bool, error) { return c.meta.IsServer(raft.ServerID(id)) }

package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/fanout"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

func (c *Cluster) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		changed := c.meta.FSM.Changed()
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			c.logger.Warn("reconciling replicas with the cluster metadata", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-c.kick:
		case <-t.C:
		}
	}
}

// reconcileParallel is how many replicas one reconcile opens, closes or
// checks at once. Opening a replica and bootstrapping its group is disk
// work (the group's snapshot directory, its first entry written and
// fsynced to the log, its term to the DB) and, with hibernation, a Raft
// shutdown: one after the other, a node took minutes to set up its
// replicas of a 10,000-partition topic. Different partitions'
// replicas share nothing reconcileReplica takes but the replication
// Node's map of replicas (its mutex is held only to reserve a group;
// each Raft starts outside it) and the DB (safe for concurrent writes). A
// voter change may wait up to 30 s for a peer, so the bound also caps how many such
// waits hold a reconcile; 16 matches how many logs the node opens at once
// (partition's openParallel): the same disk does the work.
const reconcileParallel = 16

// replicaRef is a partition of a topic of the metadata, with its local
// partition.
type replicaRef struct {
	t     meta.Topic
	id    int32
	p     *partition.Partition
	group string // meta.GroupOf(t.Config, id)
}

// reconcile brings the local topics and replicas in line with the
// metadata: topics created, altered or deleted; replicas opened (and
// bootstrapped with their initial configuration) or closed; and, on each
// partition this node leads, the group's voters made the placement's.
// Topics are reconciled one after the other (each opens its partitions'
// logs concurrently), then every topic's replicas reconcileParallel at a
// time. Once ctx ends it starts no more replicas.
func (c *Cluster) reconcile(ctx context.Context) error {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	st := c.State()
	if st.Removed[c.self] {
		// Removed while it runs: it stays out as it would restarted
		// (/readyz answers 503 with why).
		c.refuse(errRemoved(c.self))
	}
	c.groups.keep(st)
	errs := c.dropSuperseded(st)
	topics := c.o.Topics
	var replicas []replicaRef
	for _, t := range st.Topics {
		lc, err := topics.Config(t.Config.Name)
		if err == nil && lc.CreatedMs > t.Config.CreatedMs {
			continue // a newer incarnation than this state knows: it lags
		}
		if err == nil && lc.Partitions > t.Config.Partitions {
			continue // partitions added that this state does not know yet: it lags
		}
		if lc, err = c.reconcileTopic(t.Config, lc, err); err != nil {
			errs = append(errs, err)
			continue
		}
		_, parts, err := topics.Partitions(lc.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := min(len(parts), len(t.Replicas))
		groups := c.groups.topic(t.Config, n)
		for i, p := range parts[:n] {
			replicas = append(replicas, replicaRef{t, int32(i), p, groups[i]})
		}
	}
	return errors.Join(append(errs, c.reconcileReplicas(ctx, st, replicas)...)...)
}

// reconcileReplicas runs reconcileReplica for each of rs,
// reconcileParallel at a time, and returns their errors, and ctx's if it
// ended before every one started.
func (c *Cluster) reconcileReplicas(ctx context.Context, st meta.State, rs []replicaRef) []error {
	errs := make([]error, len(rs), len(rs)+1)
	fanout.Run(ctx, len(rs), reconcileParallel, func(_ context.Context, i int) {
		errs[i] = c.reconcileReplica(st, rs[i])
	})
	return append(errs, ctx.Err())
}

// reconcileTopic makes the local topic (lc, or lookupErr when it has
// none) the metadata's want: created, grown to its partition count, its
// settings altered.
func (c *Cluster) reconcileTopic(want, lc partition.TopicConfig, lookupErr error) (partition.TopicConfig, error) {
	topics := c.o.Topics
	switch {
	case errors.Is(lookupErr, partition.ErrTopicNotFound):
		return topics.Create(want)
	case lookupErr != nil:
		return lc, lookupErr
	}
	var err error
	if lc.Partitions < want.Partitions {
		if lc, err = topics.AddPartitions(want.Name, want.Partitions); err != nil {
			return lc, err
		}
	}
	if lc != want {
		return topics.Alter(want.Name, changeTo(want))
	}
	return lc, nil
}

// dropSuperseded deletes the local topics the metadata says were deleted
// (or replaced by a newer incarnation), with their groups.
func (c *Cluster) dropSuperseded(st meta.State) []error {
	var errs []error
	for _, lc := range c.o.Topics.List() {
		if !st.Supersedes(lc) {
			continue
		}
		// reconcileParallel groups at a time: each drop is a synced write
		// to the DB, and one after the other a node took 12 s to drop a
		// topic of 10,000 partitions, longer than `logd topic delete`
		// waits for it (its retry was told the topic does not exist).
		dropErrs := make([]error, lc.Partitions)
		fanout.Run(context.Background(), int(lc.Partitions), reconcileParallel, func(_ context.Context, i int) {
			g := meta.GroupOf(lc, int32(i))
			if err := c.rn.CloseReplica(g); err != nil {
				dropErrs[i] = err
				return
			}
			dropErrs[i] = c.rn.DropGroup(g)
		})
		errs = append(errs, dropErrs...)
		if err := c.o.Topics.Delete(lc.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func changeTo(c partition.TopicConfig) partition.ConfigChange {
	return partition.ConfigChange{RetentionMs: &c.RetentionMs, RetentionBytes: &c.RetentionBytes,
		RetentionRecords: &c.RetentionRecords, SegmentBytes: &c.SegmentBytes, SegmentMs: &c.SegmentMs, Cleanup: &c.Cleanup, Produce: &c.Produce}
}

// reconcileReplica opens or closes this node's replica of ref's
// partition as the placement says, wakes it or matches its voters.
func (c *Cluster) reconcileReplica(st meta.State, ref replicaRef) error {
	t, id, group := ref.t, ref.id, ref.group
	want := slices.Contains(t.Replicas[id], c.self)
	r := c.rn.Replica(group)
	switch {
	case want && r == nil:
		var err error
		if r, err = c.openReplica(st, ref); err != nil {
			return err
		}
	case !want && r != nil:
		return c.leaveGroup(st, t.Replicas[id], group, r)
	case !want:
		return nil
	}
	if servers, ok := c.boots.take(group); ok {
		c.bootstrapLate(group, r, servers)
	}
	if woke, err := c.wakeToMatch(t.Replicas[id], r); !woke || err != nil {
		return err
	}
	if !r.IsLeader() {
		return nil
	}
	return c.matchVoters(st, t.Replicas[id], r)
}

// wakeToMatch wakes r when it sleeps and its group's voters differ from
// the placement's set (wakeForVoters), and waits, for at most two of its
// heartbeat timeouts, for the election its wake started, so that the
// caller matches the voters in the same pass. The next pass would come
// too late: a woken group with nothing to do is idle, and falls asleep
// again after HibernateAfter and WakeGrace; when they are shorter than
// the reconcile's period it was asleep at every pass, and its voters
// never changed. It reports whether r is awake.
func (c *Cluster) wakeToMatch(set []string, r *replication.Replica) (bool, error) {
	if !r.Asleep() {
		return true, nil
	}
	if err := c.wakeForVoters(set, r); err != nil || r.Asleep() {
		return false, err
	}
	end := time.Now().Add(2 * r.HeartbeatTimeout())
	for poll := awaitPoll; time.Now().Before(end); poll = min(2*poll, awaitPollMax) {
		if id, _ := r.Leader(); id != "" || r.Asleep() {
			break
		}
		time.Sleep(poll)
	}
	return !r.Asleep(), nil
}

// leaveGroup closes this node's replica r of a group the placement (set)
// moved off this node, once the group's configuration no longer has it as
// a voter. Until then the group may need it: for its majority (a
// partition of one or two replicas loses its majority with it), and, when
// it leads, to add the set's new replicas and hand over (matchVoters adds
// them, then removes this node, which steps down). A sleeping replica
// that led its group is woken to do so (wakeToMatch).
func (c *Cluster) leaveGroup(st meta.State, set []string, group string, r *replication.Replica) error {
	servers, err := r.Servers()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raft.ServerID(c.self) && s.Suffrage == raft.Voter }) {
		c.boots.forget(group)
		return c.rn.CloseReplica(group)
	}
	if woke, err := c.wakeToMatch(set, r); !woke || err != nil {
		return err
	}
	if r.IsLeader() {
		return c.matchVoters(st, set, r)
	}
	return nil
}

// openReplica opens this node's replica of a partition, bootstrapping its
// group when this node is in the initial configuration.
func (c *Cluster) openReplica(st meta.State, ref replicaRef) (*replication.Replica, error) {
	t, id, p, group := ref.t, ref.id, ref.p, ref.group
	r, err := c.rn.OpenReplica(group, p.Log, replication.ReplicaOptions{
		OnApply: p.Applied,
		OnRestore: func() {
			if err := p.RebuildProducers(); err != nil {
				c.logger.Error("rebuilding producer state after a snapshot restore", "partition", p.Name(), "err", err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	born := false
	if slices.Contains(t.Initial[id], c.self) {
		var servers []raft.Server
		for _, n := range t.Initial[id] {
			servers = append(servers, raft.Server{ID: raft.ServerID(n), Address: raft.ServerAddress(st.Nodes[n].RaftAddr)})
		}
		if pref := t.Initial[id][0]; c.cfg.HibernateAfter <= 0 && pref != c.self && r.LastIndex() == 0 && c.reachable(pref) {
			// The preferred replica wins the first election
			// (firstelection.go).
			wait := c.firstElectionWait()
			c.boots.add(group, servers, wait)
			time.AfterFunc(wait, c.kickReconcile)
			return r, nil
		}
		err := r.Bootstrap(servers)
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return nil, fmt.Errorf("bootstrap %s: %w", group, err)
		}
		born = err == nil
	}
	if c.cfg.HibernateAfter > 0 {
		// A new group sleeps until it is used, and a replica this node
		// had before it restarted sleeps until a peer's RPC or a use
		// wakes it: no election for either (hibernate.go,
		// replication.Replica.SleepOpened says why a replica that was
		// awake when the node stopped sleeps too).
		var err error
		if born {
			err = r.Sleep()
		} else {
			_, err = r.SleepOpened()
		}
		if err != nil {
			c.logger.Warn("putting a new or sleeping replica to sleep", "group", group, "err", err)
		}
	}
	return r, nil
}

// bootstrapLate bootstraps group's replica r, opened without a
// configuration (firstelection.go), unless it has taken one from a leader
// or voted meanwhile (raft.ErrCantBootstrap).
func (c *Cluster) bootstrapLate(group string, r *replication.Replica, servers []raft.Server) {
	switch err := r.Bootstrap(servers); {
	case err == nil:
		c.logger.Info("a new partition's preferred replica has not led it yet: its other replicas stand for election", "group", group)
	case !errors.Is(err, raft.ErrCantBootstrap):
		c.logger.Warn("bootstrap a new partition's group", "group", group, "err", err)
	}
}

// kickReconcile asks the reconcile loop for a pass now (it runs one
// every 2 s and on each metadata change anyway).
func (c *Cluster) kickReconcile() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// matchVoters makes the voters of a group this node leads the placement's
// set: adds first, so a partition never runs on fewer replicas than asked,
// then removals (itself last: a leader removing itself steps down).
func (c *Cluster) matchVoters(st meta.State, set []string, r *replication.Replica) error {
	servers, err := r.Servers()
	if err != nil {
		return err
	}
	var have []string
	for _, s := range servers {
		have = append(have, string(s.ID))
	}
	for _, n := range set {
		if !slices.Contains(have, n) {
			addr := st.Nodes[n].RaftAddr
			if addr == "" {
				continue
			}
			if err := r.AddVoter(raft.ServerID(n), raft.ServerAddress(addr), 30*time.Second); err != nil {
				return err
			}
		}
	}
	for _, n := range have {
		if !slices.Contains(set, n) && n != c.self {
			if err := r.RemoveServer(raft.ServerID(n), 30*time.Second); err != nil {
				return err
			}
		}
	}
	if !slices.Contains(set, c.self) && slices.Contains(have, c.self) {
		return r.RemoveServer(raft.ServerID(c.self), 30*time.Second)
	}
	return nil
}

// spreadLoop hands leadership of the partitions this node leads to their
// preferred leaders (placement's first replica), so leaders are balanced
// across the nodes and come back after failures. Only to a preferred
// node that is up: it answered the lag loop's last status calls (a
// paused process does not) and its Raft port takes a connection now (a
// stopped one does not). Raft's transfer to a node that is down holds the
// partition's writes until it times out (an election timeout), and the
// clients see the partition without a leader meanwhile.
func (c *Cluster) spreadLoop(ctx context.Context) {
	every(ctx, 10*time.Second, func() {
		preferred := c.spreadTargets(c.State())
		moved, err := c.rn.SpreadLeaders(ctx, func(g string) (raft.ServerID, bool) {
			id, ok := preferred[g]
			return id, ok
		})
		if len(moved) > 0 {
			c.logger.Info("moved partition leaders to their preferred nodes", "groups", moved)
		}
		if err != nil && ctx.Err() == nil {
			c.logger.Debug("spreading leaders", "err", err)
		}
	})
}

// spreadTargets are the preferred leaders of st's partitions, by group,
// that are up (spreadLoop).
func (c *Cluster) spreadTargets(st meta.State) map[string]raft.ServerID {
	up := map[string]bool{c.self: true}
	isUp := func(id string) bool {
		ok, seen := up[id]
		if !seen {
			ok = c.answered.within(id, 2*lagInterval) && c.dialable(st.Nodes[id].RaftAddr)
			up[id] = ok
		}
		return ok
	}
	preferred := map[string]raft.ServerID{}
	for _, t := range st.Topics {
		for i, set := range t.Replicas {
			if len(set) > 0 && isUp(set[0]) {
				preferred[c.groups.of(t.Config, int32(i))] = raft.ServerID(set[0])
			}
		}
	}
	return preferred
}

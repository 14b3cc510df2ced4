package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/logging"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// ClusterConfig turns a node into a member of a cluster: every partition
// is a Raft group on its replicas, and the metadata (nodes, topics,
// placement, committed offsets) is replicated by the metadata group on
// every node.
type ClusterConfig struct {
	NodeID string
	// RaftAddr is the Raft listen address; RaftListener, when set, is used
	// instead (tests).
	RaftAddr     string
	RaftListener net.Listener
	// Advertise is the Raft address other nodes dial; "": the listener's.
	Advertise string
	// Bootstrap starts a new cluster of this node (ignored when the node
	// already has cluster state). Join is any member's API address, to
	// join through (ignored when the node already has state).
	Bootstrap bool
	Join      string
	// RaftDial overrides how Raft dials peers (fault injection in tests);
	// nil: TCP, through Routes.
	RaftDial func(ctx context.Context, addr string) (net.Conn, error)
	// Routes maps a Raft address to the address dialled instead (a test
	// harness puts a proxy on each link). From LOGD_RAFT_ROUTES in serve.
	Routes map[string]string
	// Raft is the base Raft configuration of every group; nil: defaults.
	Raft *raft.Config
}

// Validate checks the settings a user gives.
func (c *ClusterConfig) Validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("cluster mode needs --node-id")
	case strings.ContainsAny(c.NodeID, ", \t\n/"):
		return fmt.Errorf("--node-id %q: use letters, digits, '-', '_' or '.'", c.NodeID)
	case c.RaftAddr == "" && c.RaftListener == nil:
		return errors.New("cluster mode needs --raft-addr HOST:PORT")
	case c.Bootstrap && c.Join != "":
		return errors.New("give either --bootstrap (a new cluster) or --join ADDR (an existing one), not both")
	}
	return nil
}

// cluster is a node's cluster side.
type cluster struct {
	s     *Server
	cfg   ClusterConfig
	self  string
	node  *replication.Node
	meta  *meta.Group
	fwd   *forwarder
	stop  context.CancelFunc
	wg    sync.WaitGroup
	recMu sync.Mutex // one reconcile at a time

	kick   chan struct{}
	logger hclog.Logger
}

// startCluster starts the Raft port and the metadata group. Its
// background loops start with run, once the API listens.
func (s *Server) startCluster(cfg ClusterConfig) (*cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln := cfg.RaftListener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", cfg.RaftAddr)
		if err != nil {
			return nil, fmt.Errorf("listen on --raft-addr %s: %w", cfg.RaftAddr, err)
		}
	}
	var adv net.Addr
	if cfg.Advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.Advertise)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", cfg.Advertise, err)
		}
		adv = a
	}
	dial := cfg.RaftDial
	if dial == nil {
		routes := cfg.Routes
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			if to, ok := routes[addr]; ok {
				addr = to
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	// Raft and the transport log into the node's slog logger (one format,
	// one level); logging.HCLog lowers their routine lines.
	logger := logging.HCLog(s.logger, "raft")
	n, err := replication.NewNode(replication.NodeConfig{
		ID: raft.ServerID(cfg.NodeID), Listener: ln, Advertise: adv, Dial: dial,
		DataDir: s.cfg.DataDir, DB: s.db, Raft: cfg.Raft, Logger: logger,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	g, err := meta.Open(n)
	if err != nil {
		n.Close()
		return nil, err
	}
	c := &cluster{s: s, cfg: cfg, self: cfg.NodeID, node: n, meta: g, fwd: newForwarder(),
		kick: make(chan struct{}, 1), logger: logger}
	if cfg.Bootstrap && !g.HadState() {
		if err := g.Bootstrap(raft.ServerID(cfg.NodeID), n.Addr()); err != nil {
			c.close()
			return nil, fmt.Errorf("bootstrap the cluster: %w", err)
		}
	}
	if !cfg.Bootstrap && cfg.Join == "" && !g.HadState() {
		c.close()
		return nil, errors.New("this node has no cluster state: start the first node with --bootstrap and the others with --join ADDR")
	}
	s.m.reg.MustRegister(replication.NewCollector(n))
	return c, nil
}

// run starts the background loops: registration (join) and reconciling
// local replicas with the metadata.
func (c *cluster) run() {
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.wg.Add(4)
	go func() { defer c.wg.Done(); c.lagLoop(ctx) }()
	go func() { defer c.wg.Done(); c.registerLoop(ctx) }()
	go func() { defer c.wg.Done(); c.reconcileLoop(ctx) }()
	go func() { defer c.wg.Done(); c.spreadLoop(ctx) }()
}

// close stops the loops, every replica, the metadata group and the Raft
// port. The logs and the DB stay open (the server closes them).
func (c *cluster) close() error {
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	c.fwd.close()
	errs := []error{c.node.Close(), c.meta.Close()}
	return errors.Join(errs...)
}

func (c *cluster) raftAddr() string { return string(c.node.Addr()) }

// registerLoop makes sure the metadata lists this node with its current
// addresses: on the first start it joins (through cfg.Join), on later
// starts it updates its addresses. It ends once they are listed.
func (c *cluster) registerLoop(ctx context.Context) {
	self := meta.Node{ID: c.self, APIAddr: c.s.Addr(), RaftAddr: c.raftAddr()}
	started := time.Now()
	for wait := time.Duration(0); ; wait = time.Second {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if n, ok := c.meta.FSM.State().Nodes[c.self]; ok && n == self {
			return
		}
		var err error
		switch {
		case c.meta.IsLeader():
			err = c.join(ctx, self)
		default:
			target := c.cfg.Join
			if lead := c.metaLeaderAPI(); lead != "" {
				target = lead
			}
			if target == "" {
				continue // a bootstrapping node waits to be elected
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = c.fwd.join(cctx, target, self)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			// A join that waits for the cluster's election is routine; one
			// that keeps failing (a wrong --join) is worth a warning.
			level := slog.LevelInfo
			if time.Since(started) > 30*time.Second {
				level = slog.LevelWarn
			}
			c.s.logger.Log(ctx, level, "joining the cluster: retrying", "err", err)
		}
	}
}

// join adds a node to the metadata group and the node list (on the
// metadata leader).
func (c *cluster) join(ctx context.Context, n meta.Node) error {
	if err := c.meta.AddVoter(raft.ServerID(n.ID), raft.ServerAddress(n.RaftAddr)); err != nil {
		return err
	}
	return c.meta.Apply(ctx, meta.Command{Op: meta.OpAddNode, Node: &n})
}

// metaLeaderAPI is the metadata leader's API address, "" when unknown.
func (c *cluster) metaLeaderAPI() string {
	id := c.meta.Leader()
	if id == "" {
		return ""
	}
	return c.meta.FSM.State().Nodes[id].APIAddr
}

// apiAddr is a node's API address, "" when unknown.
func (c *cluster) apiAddr(id string) string {
	return c.meta.FSM.State().Nodes[id].APIAddr
}

func (c *cluster) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		changed := c.meta.FSM.Changed()
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			c.s.logger.Warn("reconciling replicas with the cluster metadata", "err", err)
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

// reconcile brings the local topics and replicas in line with the
// metadata: topics created, altered or deleted; replicas opened (and
// bootstrapped with their initial configuration) or closed; and, on each
// partition this node leads, the group's voters made the placement's.
func (c *cluster) reconcile(ctx context.Context) error {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	st := c.meta.FSM.State()
	topics := c.s.topics
	var errs []error
	for _, lc := range topics.List() {
		if !st.Supersedes(lc) {
			continue
		}
		for i := range lc.Partitions {
			g := meta.GroupOf(lc, i)
			if err := c.node.ClosePartition(g); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, c.node.DropGroup(g))
		}
		if err := topics.Delete(lc.Name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range st.Topics {
		lc, err := topics.Config(t.Config.Name)
		if err == nil && lc.CreatedMs > t.Config.CreatedMs {
			continue // a newer incarnation than this state knows: it lags
		}
		if errors.Is(err, partition.ErrTopicNotFound) {
			lc, err = topics.Create(t.Config)
		} else if err == nil && lc != t.Config {
			lc, err = topics.Alter(t.Config.Name, changeTo(t.Config))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, parts, err := topics.Partitions(lc.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, p := range parts {
			errs = append(errs, c.reconcileReplica(ctx, st, t, int32(i), p))
		}
	}
	return errors.Join(errs...)
}

func changeTo(c partition.TopicConfig) partition.ConfigChange {
	return partition.ConfigChange{RetentionMs: &c.RetentionMs, RetentionBytes: &c.RetentionBytes,
		RetentionRecords: &c.RetentionRecords, SegmentBytes: &c.SegmentBytes, SegmentMs: &c.SegmentMs}
}

func (c *cluster) reconcileReplica(ctx context.Context, st meta.State, t meta.Topic, id int32, p *partition.Partition) error {
	group := meta.GroupOf(t.Config, id)
	want := slices.Contains(t.Replicas[id], c.self)
	r := c.node.Partition(group)
	switch {
	case want && r == nil:
		var err error
		r, err = c.node.OpenReplica(group, p.Log, replication.ReplicaOptions{
			OnApply: p.Observe,
			OnRestore: func() {
				if err := p.RebuildProducers(); err != nil {
					c.s.logger.Error("rebuilding producer state after a snapshot restore", "partition", p.Name(), "err", err)
				}
			},
		})
		if err != nil {
			return err
		}
		if slices.Contains(t.Initial[id], c.self) {
			var servers []raft.Server
			for _, n := range t.Initial[id] {
				servers = append(servers, raft.Server{ID: raft.ServerID(n), Address: raft.ServerAddress(st.Nodes[n].RaftAddr)})
			}
			if err := r.Bootstrap(servers); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				return fmt.Errorf("bootstrap %s: %w", group, err)
			}
		}
	case !want && r != nil:
		return c.node.ClosePartition(group)
	case !want:
		return nil
	}
	if !r.IsLeader() {
		return nil
	}
	// The leader makes the group's voters the placement's: adds first, so a
	// partition never runs on fewer replicas than asked, then removals
	// (itself last: a leader removing itself steps down).
	servers, err := r.Servers()
	if err != nil {
		return err
	}
	var have []string
	for _, s := range servers {
		have = append(have, string(s.ID))
	}
	for _, n := range t.Replicas[id] {
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
		if !slices.Contains(t.Replicas[id], n) && n != c.self {
			if err := r.RemoveServer(raft.ServerID(n), 30*time.Second); err != nil {
				return err
			}
		}
	}
	if !slices.Contains(t.Replicas[id], c.self) && slices.Contains(have, c.self) {
		return r.RemoveServer(raft.ServerID(c.self), 30*time.Second)
	}
	return nil
}

// spreadLoop hands leadership of the partitions this node leads to their
// preferred leaders (placement's first replica), so leaders are balanced
// across the nodes and come back after failures.
func (c *cluster) spreadLoop(ctx context.Context) {
	every(ctx, 10*time.Second, func() {
		st := c.meta.FSM.State()
		preferred := map[string]raft.ServerID{}
		for _, t := range st.Topics {
			for i, set := range t.Replicas {
				if len(set) > 0 {
					preferred[meta.GroupOf(t.Config, int32(i))] = raft.ServerID(set[0])
				}
			}
		}
		moved, err := c.node.SpreadLeaders(func(g string) (raft.ServerID, bool) {
			id, ok := preferred[g]
			return id, ok
		})
		if len(moved) > 0 {
			c.s.logger.Info("moved partition leaders to their preferred nodes", "groups", moved)
		}
		if err != nil && ctx.Err() == nil {
			c.s.logger.Debug("spreading leaders", "err", err)
		}
	})
}

// every runs fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// replica returns this node's replica of p when it leads p's group, or
// the error to answer: UNAVAILABLE naming the leader's API address when it
// is known (the client follows it).
func (c *cluster) replica(p *partition.Partition) (*replication.Partition, error) {
	st := c.meta.FSM.State()
	t, ok := st.Topics[p.Topic]
	if !ok || p.ID >= int32(len(t.Replicas)) {
		// This node has the topic but its metadata does not: it may be
		// behind (a restarted node's metadata is its last snapshot's until
		// a leader lets its log replay), or the topic is being deleted.
		// Only the current metadata leader may say it is gone.
		return nil, c.s.topicLookup(context.Background(), p.Topic, fmt.Errorf("%w: %q", partition.ErrTopicNotFound, p.Topic))
	}
	r := c.node.Partition(meta.GroupOf(t.Config, p.ID))
	if r == nil {
		// Not a replica here: send the client to the preferred leader,
		// which leads or knows who does.
		for _, n := range t.Replicas[p.ID] {
			if n != c.self {
				return nil, notLeader(p, st.Nodes[n].APIAddr)
			}
		}
		return nil, notLeader(p, "")
	}
	if r.IsLeader() {
		return r, nil
	}
	id, _ := r.Leader()
	return nil, notLeader(p, st.Nodes[string(id)].APIAddr)
}

// lagInterval is how often a leader measures its followers' lag.
const lagInterval = 5 * time.Second

// lagLoop measures, every lagInterval, how far each follower of the
// partitions this node leads is behind (the leader's last index minus the
// follower's applied index), for logd_raft_follower_lag_entries. A
// follower that does not answer is reported at -1.
func (c *cluster) lagLoop(ctx context.Context) {
	every(ctx, lagInterval, func() {
		st := c.meta.FSM.State()
		type led struct {
			topic string
			id    int32
			last  uint64
		}
		leading := map[string]led{} // by "topic/partition"
		followers := map[string]bool{}
		for _, tp := range st.Topics {
			for i, set := range tp.Replicas {
				r := c.node.Partition(meta.GroupOf(tp.Config, int32(i)))
				if r == nil || !r.IsLeader() {
					continue
				}
				leading[fmt.Sprintf("%s/%d", tp.Config.Name, i)] = led{tp.Config.Name, int32(i), r.LastIndex()}
				for _, n := range set {
					if n != c.self {
						followers[n] = true
					}
				}
			}
		}
		type sample struct {
			topic, partition, follower string
			lag                        float64
		}
		var samples []sample
		for n := range followers {
			cctx, cancel := context.WithTimeout(ctx, statusTimeout)
			resp := &pb.ClusterStatusResponse{}
			err := c.fwd.invoke(cctx, st.Nodes[n].APIAddr, pb.Cluster_Status_FullMethodName, &pb.ClusterStatusRequest{Local: true}, resp)
			cancel()
			seen := map[string]uint64{}
			for _, p := range resp.GetPartitions() {
				seen[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.AppliedIndex
			}
			for key, l := range leading {
				if !slices.Contains(st.Topics[l.topic].Replicas[l.id], n) {
					continue
				}
				lag := -1.0
				if applied, ok := seen[key]; ok && err == nil {
					lag = float64(l.last) - float64(applied)
				}
				samples = append(samples, sample{l.topic, strconv.Itoa(int(l.id)), n, lag})
			}
		}
		c.s.m.followerLag.Reset()
		for _, s := range samples {
			c.s.m.followerLag.WithLabelValues(s.topic, s.partition, s.follower).Set(s.lag)
		}
	})
}

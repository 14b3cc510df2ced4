package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/logd/logd/internal/logging"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// Config turns a node into a member of a cluster: every partition is a
// Raft group on its replicas, and the metadata (nodes, topics, placement,
// committed offsets) is replicated by the metadata group on every node.
type Config struct {
	NodeID string
	// RaftAddr is the Raft listen address; RaftListener, when set, is used
	// instead (tests).
	RaftAddr     string
	RaftListener net.Listener
	// Advertise is the Raft address other nodes dial; "": the listener's.
	Advertise string
	// Bootstrap starts a new cluster of this node (ignored when the node
	// already has cluster state). Join is any member's API address, to
	// join through; a node that already has state only checks that the
	// node there belongs to its cluster (identity.go), and is refused if
	// not.
	Bootstrap bool
	Join      string
	// JoinLookup asks the node whose API is at Join for its Raft address:
	// the one call a node makes of another's public API, as any client
	// may (the node's front-end provides it). nil: Join is that Raft
	// address itself (tests).
	JoinLookup func(ctx context.Context, apiAddr string) (raftAddr string, err error)
	// RaftDial overrides how Raft dials peers (fault injection in tests);
	// nil: TCP, through Routes.
	RaftDial func(ctx context.Context, addr string) (net.Conn, error)
	// Routes maps a Raft address to the address dialled instead (a test
	// harness puts a proxy on each link). From LOGD_RAFT_ROUTES in serve.
	Routes map[string]string
	// Raft is the base Raft configuration of every group; nil: defaults.
	Raft *raft.Config
	// HibernateAfter puts a partition group to sleep once it has been
	// idle that long (hibernate.go); 0: never.
	HibernateAfter time.Duration
	// WakeGrace is how long a group that woke stays awake at least while
	// nobody uses it (hibernate.go); 0: DefaultWakeGrace. Tests shorten it.
	WakeGrace time.Duration
	// WakeRate bounds how many sleeping groups a second this node wakes
	// for uses (hibernate.go); 0: DefaultWakeRate, < 0: no bound.
	WakeRate float64
	// MaxAwake: a use wakes a sleeping group only while fewer of this
	// node's replicas are awake (hibernate.go); 0: no bound.
	MaxAwake int
}

// Validate checks the settings a user gives.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("cluster mode needs --node-id")
	case strings.ContainsAny(c.NodeID, ", \t\n/"):
		return fmt.Errorf("--node-id %q: use letters, digits, '-', '_' or '.'", c.NodeID)
	case c.RaftAddr == "" && c.RaftListener == nil:
		return errors.New("cluster mode needs --raft-addr HOST:PORT")
	case c.Bootstrap && c.Join != "":
		return errors.New("give either --bootstrap (a new cluster) or --join ADDR (an existing one), not both")
	case c.MaxAwake < 0:
		return fmt.Errorf("--partition-max-awake %d: give a number of replicas, or 0 for no bound", c.MaxAwake)
	case math.IsNaN(c.WakeRate) || math.IsInf(c.WakeRate, 0):
		return fmt.Errorf("--partition-wake-rate %v: give a number of wakes a second (0: the default, %v; below 0: no bound)", c.WakeRate, DefaultWakeRate)
	case c.HibernateAfter < 0:
		return fmt.Errorf("--partition-hibernate-after %v: give a duration >= 0 (0: partitions never sleep)", c.HibernateAfter)
	}
	return nil
}

// Options are what the node gives its control plane.
type Options struct {
	DataDir  string
	DB       *pebble.DB        // the node's metadata store (Raft's stable state)
	Topics   *partition.Topics // the node's local topics, which reconciliation drives
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Cluster is a node's cluster side.
type Cluster struct {
	cfg    Config
	o      Options
	self   string
	rn     *replication.Node
	meta   *meta.Group
	stop   context.CancelFunc
	wg     sync.WaitGroup
	recMu  sync.Mutex // one reconcile at a time
	groups groupNames // the partitions' group names (groupnames.go)
	kick   chan struct{}
	logger *slog.Logger
	lag    *prometheus.GaugeVec
	// answered is when each follower last answered the lag loop's status
	// call (status.go), for the spread loop (reconcile.go).
	answered answeredAt

	// members serializes the membership changes this node makes as the
	// metadata leader (join, remove), so that a registration checked
	// against the removed nodes is not applied after a removal it raced.
	members sync.Mutex
	refused atomic.Pointer[error] // why the cluster refused this node
	idMu    sync.Mutex            // one change of the cluster id at a time
	peers   raft.StreamLayer      // the peer channel (peerservice.go)
	// handlers are the peer calls the node's core answers (Handle).
	handlers peerHandlers

	// loops is the background loops' context (Run); reach, whether peers
	// answered lately (hibernate.go).
	loops context.Context
	reach reachability
	// wakes paces the wakes of sleeping groups for uses, and awake counts
	// this node's awake replicas (hibernate.go).
	wakes *rate.Limiter
	awake awakeCount
	// fullWarned is when mayWake last warned that uses wait for room
	// (Unix nanoseconds).
	fullWarned atomic.Int64
	// boots are the new groups this node waits to bootstrap
	// (firstelection.go).
	boots deferredBoots
}

// Start starts the Raft port and the metadata group. The background loops
// start with Run, once the front-ends listen.
func Start(cfg Config, o Options) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, adv, err := raftListener(cfg)
	if err != nil {
		return nil, err
	}
	clusterID, err := readClusterID(o.DataDir)
	if err != nil {
		ln.Close()
		return nil, err
	}
	// Raft and the transport log into the node's slog logger (one format,
	// one level); logging.HCLog lowers their routine lines.
	var hl hclog.Logger = logging.HCLog(o.Logger, "raft")
	n, err := replication.NewNode(replication.NodeConfig{
		ID: raft.ServerID(cfg.NodeID), Listener: ln, Advertise: adv, Dial: cfg.RaftDialer(),
		DataDir: o.DataDir, DB: o.DB, Raft: cfg.Raft, Logger: hl, ClusterID: clusterID,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	peers, err := n.Stream(PeerChannel)
	if err != nil {
		n.Close()
		return nil, err
	}
	g, err := meta.Open(n)
	if err != nil {
		n.Close()
		return nil, err
	}
	c := &Cluster{cfg: cfg, o: o, self: cfg.NodeID, rn: n, meta: g, peers: peers, kick: make(chan struct{}, 1), logger: o.Logger,
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "logd_raft_follower_lag_entries",
			Help: "On a partition's leader: Raft entries each follower has yet to apply (-1: it did not answer). Measured every 5s."},
			[]string{"topic", "partition", "follower"}),
		wakes: wakeLimiter(cfg.WakeRate)}
	if cfg.Bootstrap && !g.HadState() {
		if err := c.bootstrap(); err != nil {
			c.Close()
			return nil, fmt.Errorf("bootstrap the cluster: %w", err)
		}
	}
	if !cfg.Bootstrap && cfg.Join == "" && !g.HadState() {
		c.Close()
		return nil, errors.New("this node has no cluster state: start the first node with --bootstrap and the others with --join ADDR")
	}
	if err := c.checkJoinTargetAtStart(); err != nil {
		c.Close()
		return nil, err
	}
	o.Registry.MustRegister(replication.NewCollector(n), c.lag)
	return c, nil
}

// bootstrap starts a new cluster of this node, with a new cluster id
// (identity.go), stored before the metadata group's first entry; a node
// that stored one and stopped before bootstrapping keeps it.
func (c *Cluster) bootstrap() error {
	if c.rn.ClusterID() == "" {
		id, err := newClusterID()
		if err != nil {
			return err
		}
		if err := c.adoptClusterID(id, "made at --bootstrap"); err != nil {
			return err
		}
	}
	return c.meta.Bootstrap(raft.ServerID(c.cfg.NodeID), c.rn.Addr())
}

func raftListener(cfg Config) (net.Listener, net.Addr, error) {
	ln := cfg.RaftListener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", cfg.RaftAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen on --raft-addr %s: %w", cfg.RaftAddr, err)
		}
	}
	var adv net.Addr
	if cfg.Advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.Advertise)
		if err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("raft advertise address %q: %w", cfg.Advertise, err)
		}
		adv = a
	}
	return ln, adv, nil
}

// RaftDialer is how Raft reaches a peer: RaftDial when set (tests inject
// faults through it), else TCP through Routes. A node with Raft TLS wraps
// it in the handshake.
func (c *Config) RaftDialer() func(ctx context.Context, addr string) (net.Conn, error) {
	if c.RaftDial != nil {
		return c.RaftDial
	}
	routes := c.Routes
	return func(ctx context.Context, addr string) (net.Conn, error) {
		if to, ok := routes[addr]; ok {
			addr = to
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// Run starts the background loops: registration (join) with self's
// advertised addresses, reconciling local replicas with the metadata,
// spreading leaders and measuring follower lag.
func (c *Cluster) Run(self meta.Node) {
	self.ID, self.RaftAddr = c.self, c.RaftAddr()
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.reach.mu.Lock()
	c.loops = ctx
	c.reach.mu.Unlock()
	c.wg.Add(7)
	go func() { defer c.wg.Done(); c.servePeers(ctx, self) }()
	go func() { defer c.wg.Done(); c.identityLoop(ctx) }()
	go func() { defer c.wg.Done(); c.checkJoinTarget(ctx) }()
	go func() { defer c.wg.Done(); c.lagLoop(ctx) }()
	go func() { defer c.wg.Done(); c.registerLoop(ctx, self) }()
	go func() { defer c.wg.Done(); c.reconcileLoop(ctx) }()
	go func() { defer c.wg.Done(); c.spreadLoop(ctx) }()
	if c.cfg.HibernateAfter > 0 {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.hibernateLoop(ctx) }()
	}
}

// Close stops the loops, every replica, the metadata group and the Raft
// port. The logs and the DB stay open (the node closes them).
func (c *Cluster) Close() error {
	if c.stop != nil {
		c.stop()
	}
	c.reach.mu.Lock()
	c.reach.closed = true // no reachability check starts from now on
	c.reach.mu.Unlock()
	c.peers.Close() // ends servePeers and every call it serves
	c.wg.Wait()
	return errors.Join(c.rn.Close(), c.meta.Close())
}

// Self is this node's id.
func (c *Cluster) Self() string { return c.self }

// RaftAddr is this node's advertised Raft address.
func (c *Cluster) RaftAddr() string { return string(c.rn.Addr()) }

// State is the metadata as this node has applied it.
func (c *Cluster) State() meta.State { return c.meta.FSM.State() }

// Changed is closed at the next metadata change applied here.
func (c *Cluster) Changed() <-chan struct{} { return c.meta.FSM.Changed() }

// Offsets is the committed offsets' store: the metadata group's.
func (c *Cluster) Offsets() *offsets.Store { return c.meta.FSM.Offsets() }

// Members lists the nodes the metadata holds.
func (c *Cluster) Members() map[string]meta.Node { return c.meta.FSM.Nodes() }

// LocalReplica is this node's replica of a partition group, nil without
// one.
func (c *Cluster) LocalReplica(group string) *replication.Replica { return c.rn.Replica(group) }

// node is a member by id: only its ID when the metadata does not list it
// (yet), the zero Node for "".
func (c *Cluster) node(id string) meta.Node {
	if id == "" {
		return meta.Node{}
	}
	n, ok := c.meta.FSM.Node(id)
	if !ok {
		n.ID = id
	}
	return n
}

// IsMetaLeader reports whether this node leads the metadata group.
func (c *Cluster) IsMetaLeader() bool { return c.meta.IsLeader() }

// MetaLeader is the metadata group's leader (the zero Node when unknown).
func (c *Cluster) MetaLeader() meta.Node { return c.node(c.meta.Leader()) }

// metaNotLeader is the answer of a node that does not lead the metadata
// group, to a request it has not acted on.
func (c *Cluster) metaNotLeader() error {
	return &NotLeaderError{What: metaWhat, Leader: c.MetaLeader(), Untouched: true}
}

// OnMetaLeader makes a metadata request current on the metadata leader:
// a barrier in this term (so this node's state includes every earlier
// write), or *NotLeaderError (Untouched) on any other node.
func (c *Cluster) OnMetaLeader() error {
	if !c.meta.IsLeader() {
		return c.metaNotLeader()
	}
	return c.RaftError(c.meta.Barrier(5 * time.Second))
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

package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/retention"
)

// Defaults.
const (
	DefaultDataDir           = "./data"
	DefaultRetentionInterval = 30 * time.Second
	DefaultMaxBatchBytes     = 1 << 20
	// SelfID names a node that runs alone.
	SelfID = "1"
)

// Config configures the broker. Zero values take the documented defaults.
type Config struct {
	DataDir           string // default ./data
	Fsync             log.FsyncPolicy
	RetentionInterval time.Duration // default 30s
	MaxBatchBytes     int           // largest accepted batch; default 1 MiB
	// MinFreeBytes: appends are refused while the data directory's file
	// system has less free space (metadata writes at half of it); 0: 5% of
	// the file system, between 1 MiB and 1 GiB.
	MinFreeBytes int64
	// LogFS, when set, is the file system the partitions' logs use (tests
	// inject I/O faults through it); nil: the operating system's.
	LogFS log.FS
	// Cluster, when set, runs the node as a member of a cluster.
	Cluster *cluster.Config
	// Registry is the node's Prometheus registry; nil: a new one.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// Auth is --auth, --authz and --super-users (auth.go); the zero value
	// admits everyone as anonymous and authorizes everything.
	Auth AuthConfig
	// CleanerBytesPerSecond bounds the compaction cleaner's disk I/O on
	// this node (default DefaultCleanerBytesPerSecond; < 0: no bound).
	CleanerBytesPerSecond int64
	// CleanerMapEntries bounds the cleaner's key map (default
	// DefaultCleanerMapEntries): more keys take more passes.
	CleanerMapEntries int
}

// Broker is one node's core.
type Broker struct {
	cfg       Config
	logger    *slog.Logger
	db        *pebble.DB
	topics    *partition.Topics
	offsets   *offsets.Store
	lag       *offsets.LagCollector
	trimmer   *retention.Trimmer
	cleaner   *cleaner
	kv        *kvView            // the key-value view of compacted topics (kv.go)
	plane     controlPlane       // local or Raft, chosen in openStorage
	stopBG    context.CancelFunc // stops background work (the trimmer)
	bg        sync.WaitGroup
	m         *metrics
	disk      *diskGuard
	budget    *MemBudget // Fetch's
	serving   atomic.Bool
	self      atomic.Pointer[Node] // the advertised addresses, from Ready
	coord     coordinator
	txns      txnHolder      // the transaction coordinator (txn.go)
	wakes     wakeQueue      // produces waiting for a sleeping partition's wake (wake.go)
	share     shareState     // the share groups (share.go)
	consumers consumerGroups // the server-assigned consumer groups (consumer.go)

	authStore *authStore          // users and ACLs (authstore.go)
	quotas    quotaState          // the client quotas' enforcement (quotaenforce.go)
	authn     *auth.Authenticator // the Gate's
	authz     *auth.Authorizer    // the one authorization point

	mu        sync.Mutex // guards closing
	closing   bool
	inflight  sync.WaitGroup
	shutdown  chan struct{} // closed when Shutdown starts
	closeErr  error
	closeOnce sync.Once
}

// Open opens the data directory: topics, offsets, retention, the disk
// guard, the metrics, and in a cluster the control plane (package
// cluster). Background loops that need the node's advertised addresses
// start with Ready.
func Open(cfg Config) (*Broker, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.RetentionInterval <= 0 {
		cfg.RetentionInterval = DefaultRetentionInterval
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.CleanerBytesPerSecond == 0 {
		cfg.CleanerBytesPerSecond = DefaultCleanerBytesPerSecond
	}
	if cfg.CleanerMapEntries <= 0 {
		cfg.CleanerMapEntries = DefaultCleanerMapEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Broker{cfg: cfg, logger: cfg.Logger, budget: NewMemBudget(readBudgetBytes),
		shutdown: make(chan struct{})}
	b.coord.b = b
	b.txns.b = b
	b.self.Store(&Node{ID: SelfID, KafkaID: 1})
	b.m = newMetrics(cfg.Registry, func() *partition.Topics { return b.topics })
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	b.disk = newDiskGuard(cfg.DataDir, cfg.MinFreeBytes, b.logger)
	b.disk.prepareStart()
	if err := b.openStorage(); err != nil {
		b.closeStorage()
		return nil, err
	}
	if err := b.openAuth(); err != nil {
		b.closeStorage()
		return nil, err
	}
	b.lag = offsets.NewLagCollector(b.groupPositions)
	b.m.reg.MustRegister(b.lag, b.coord.collector())
	bgCtx, stopBG := context.WithCancel(context.Background())
	b.stopBG = stopBG
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.trimmer.Run(bgCtx) }()
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.runCleaner(bgCtx) }()
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.coord.watch(bgCtx) }()
	b.bg.Add(1)
	go func() { defer b.bg.Done(); b.txns.watch(bgCtx) }()
	return b, nil
}

// openStorage opens the metadata store, the topics, the offsets and, in a
// cluster, the control plane.
func (b *Broker) openStorage() error {
	// The trimmer exists before the logs open: their roll hook kicks it.
	b.trimmer = retention.NewTrimmer(retention.Options{
		Targets:  b.retentionTargets,
		Interval: b.cfg.RetentionInterval,
		Logger:   b.logger,
	})
	b.m.reg.MustRegister(b.trimmer)
	b.cleaner = newCleaner(b.m.reg)
	db, err := pebble.Open(filepath.Join(b.cfg.DataDir, "meta"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return openMetaError(b.cfg.DataDir, err)
	}
	b.db = db
	b.kv = newKVView(db)
	topics, err := partition.Open(partition.Options{
		DataDir:    b.cfg.DataDir,
		DB:         db,
		Logger:     b.logger,
		LogOptions: b.logOptions,
	})
	if err != nil {
		return err
	}
	b.topics = topics
	if b.cfg.Cluster == nil {
		l, err := newLocalPlane(b.cfg.DataDir, db, topics)
		if err != nil {
			return err
		}
		b.plane = l
	} else {
		cl, err := cluster.Start(*b.cfg.Cluster, cluster.Options{DataDir: b.cfg.DataDir, DB: db, Topics: topics,
			Logger: b.logger, Registry: b.m.reg})
		if err != nil {
			return err
		}
		b.plane = &raftPlane{cl: cl}
		b.handlePeers()
	}
	// Committed offsets are the metadata group's in a cluster.
	b.offsets = b.plane.offsetStore()
	return nil
}

// Ready is called once the front-ends listen, with the addresses they
// advertise (self's APIAddr, KafkaAddr, HTTPAddr; the rest is filled in):
// from then on log writes pass the disk guard, and in a cluster the node
// registers these addresses and its background loops run.
func (b *Broker) Ready(self Node) {
	self = b.plane.identify(self)
	b.self.Store(&self)
	b.serving.Store(true)
	if b.cfg.Auth.BootstrapUser != "" {
		b.bg.Add(1)
		go func() { defer b.bg.Done(); b.bootstrapUser() }()
	}
	b.plane.run(self)
}

// Registry is the node's Prometheus registry.
func (b *Broker) Registry() *prometheus.Registry { return b.m.reg }

// Cluster is the node's control plane, nil on a node that runs alone.
func (b *Broker) Cluster() *cluster.Cluster { return b.plane.cluster() }

// Done is closed when the broker starts shutting down: long polls end.
func (b *Broker) Done() <-chan struct{} { return b.shutdown }

// logFS is the file system the logs use, before the disk guard.
func (b *Broker) logFS() log.FS {
	if b.cfg.LogFS != nil {
		return b.cfg.LogFS
	}
	return log.OSFS{}
}

// logOptions are the options of a partition's log.
func (b *Broker) logOptions(c partition.TopicConfig) log.Options {
	return log.Options{
		FS:           guardedFS{FS: b.logFS(), g: b.disk, serving: &b.serving},
		SegmentBytes: c.SegmentBytes,
		SegmentAge:   time.Duration(c.SegmentMs) * time.Millisecond,
		Fsync:        b.cfg.Fsync,
		// In a cluster, readers see what Raft committed only.
		ManualHighWatermark: b.cfg.Cluster != nil,
		Hooks: log.Hooks{
			Fsync:   func(d time.Duration) { b.m.fsyncLatency.Observe(d.Seconds()) },
			Written: func(n int) { b.m.diskWrittenBytes.Add(float64(n)) },
			Rolled:  func(log.SegmentInfo) { b.trimmer.Kick(); b.kickCleaner() },
		},
	}
}

// retentionTargets lists every partition with its topic's current policy:
// read at each trim, so `topic alter` takes effect at the next one.
func (b *Broker) retentionTargets() ([]retention.Target, error) {
	var ts []retention.Target
	b.topics.Each(func(c partition.TopicConfig, p *partition.Partition) {
		l, ok := b.plane.retentionLog(c, p)
		if !ok {
			return // no replica here
		}
		// A compact-only topic keeps its segments: the cleaner thins them.
		var policy retention.Policy
		if c.Cleanups().Deletes() {
			policy = retention.PolicyFromLimits(c.RetentionMs, c.RetentionBytes, c.RetentionRecords)
		}
		ts = append(ts, retention.Target{Topic: c.Name, Partition: p.ID, Log: l, Policy: policy})
	})
	return ts, nil
}

// enter admits a request unless the broker is shutting down; every
// admitted request calls leave when done, and Close waits for them before
// closing the logs.
func (b *Broker) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return kind.ErrShuttingDown
	}
	b.inflight.Add(1)
	return nil
}

func (b *Broker) leave() { b.inflight.Done() }

// Shutdown starts stopping: new requests are refused (kind.ErrShuttingDown),
// long polls and live tails end (Done is closed), and log writes pass the
// disk guard unchecked no more. Close finishes. Safe to call more than
// once.
func (b *Broker) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return
	}
	b.closing = true
	b.serving.Store(false)
	close(b.shutdown)
}

// Close stops the broker: Shutdown, wait for the requests admitted, stop
// the background work, fsync and close the logs. Safe to call more than
// once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.Shutdown()
		b.inflight.Wait()
		b.stopBG()
		b.bg.Wait()
		b.coord.close()
		b.txns.close()
		b.closeErr = b.closeStorage()
	})
	return b.closeErr
}

func (b *Broker) closeStorage() error {
	if b.disk != nil {
		b.disk.wait() // a space reserve being made in the data directory
	}
	var errs []error
	if b.plane != nil {
		errs = append(errs, b.plane.close())
	}
	if b.topics != nil {
		errs = append(errs, b.topics.Close())
	}
	if b.db != nil {
		errs = append(errs, b.db.Close())
	}
	return errors.Join(errs...)
}

// LocalNode is this node with the addresses it advertises.
func (b *Broker) LocalNode() Node {
	return b.plane.localNode(*b.self.Load())
}

// Nodes lists the members in id order: this node alone, or the nodes the
// cluster metadata holds (as this node has applied it).
func (b *Broker) Nodes(ctx context.Context) ([]Node, error) {
	return b.plane.nodes(b.LocalNode()), nil
}

// NodeLive reports whether node id counts as up, as Kafka counts a
// broker until it fences it: it is this node, or it answered on its Raft
// port in the last seconds, or it still leads a partition as this node
// sees them (Kafka fences a broker and moves its leaderships in one step,
// so a leader is always a listed broker; a client that finds a leader it
// cannot reach retries, one that finds none listed may give up).
func (b *Broker) NodeLive(ctx context.Context, id string) bool {
	if b.plane.live(id) {
		return true
	}
	for _, c := range b.topics.List() {
		t, err := b.topic(ctx, c.Name, false)
		if err != nil {
			continue // deleted meanwhile
		}
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}

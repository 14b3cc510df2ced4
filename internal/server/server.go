package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/retention"
)

// Defaults.
const (
	DefaultAddr              = "127.0.0.1:7070"
	DefaultHTTPAddr          = "127.0.0.1:7071"
	DefaultDataDir           = "./data"
	DefaultRetentionInterval = 30 * time.Second
	DefaultMaxBatchBytes     = 1 << 20
	defaultFetchBytes        = 1 << 20
	maxFetchBytes            = 16 << 20 // one Fetch response
	maxSubscribeBytes        = 4 << 20  // one Subscribe message
	// readBudgetBytes bounds the memory of all Fetch responses being read
	// or sent at once; fetches beyond it wait. Subscriptions have a budget
	// of their own (subscribe.go), so that readers that do not read cannot
	// hold up fetches.
	readBudgetBytes = 128 << 20
	maxWait         = 5 * time.Minute
	shutdownGrace   = 10 * time.Second
	// maxConnectionIdle closes connections idle this long.
	maxConnectionIdle = 5 * time.Minute
)

// Server is a running node.
type Server struct {
	pb.UnimplementedLogServer
	pb.UnimplementedAdminServer
	pb.UnimplementedOffsetsServer
	pb.UnimplementedClusterServer

	cfg     Config
	logger  *slog.Logger
	db      *pebble.DB
	topics  *partition.Topics
	offsets *offsets.Store
	lag     *offsets.LagCollector
	trimmer *retention.Trimmer
	cl      *cluster           // nil on a node that runs alone
	stopBG  context.CancelFunc // stops background work (the trimmer)
	bg      sync.WaitGroup
	m       *metrics

	grpc       *grpc.Server
	lis        net.Listener
	health     *health.Server
	http       *http.Server
	httpLis    net.Listener
	served     sync.WaitGroup
	ready      atomic.Bool
	shutdown   chan struct{} // closed when Close starts
	readBudget *memBudget    // Fetch's
	disk       *diskGuard
	inflight   sync.WaitGroup
	mu         sync.Mutex // guards closing
	closing    bool
	closeErr   error
	closed     chan struct{}

	subBudget   *memBudget // the subscriptions' (subscribe.go)
	subscribers atomic.Int64
}

// Start opens the data directory and starts serving.
func Start(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.RetentionInterval <= 0 {
		cfg.RetentionInterval = DefaultRetentionInterval
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxHTTPConnections <= 0 {
		cfg.MaxHTTPConnections = DefaultMaxHTTPConnections
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := checkListenAddrs(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, shutdown: make(chan struct{}), closed: make(chan struct{}),
		readBudget: newMemBudget(readBudgetBytes), subBudget: newMemBudget(subscribeBudgetBytes)}
	if s.cfg.SendTimeout <= 0 {
		s.cfg.SendTimeout = DefaultSendTimeout
	}
	s.m = newMetrics(func() *partition.Topics { return s.topics })

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	s.disk = newDiskGuard(cfg.DataDir, cfg.MinFreeBytes, s.logger)
	s.disk.prepareStart()
	// The HTTP listener comes first so /healthz answers while a large log
	// is being recovered (/readyz says when it is done).
	s.cfg.MaxConnections, s.cfg.MaxHTTPConnections = connectionCaps(cfg.MaxConnections, cfg.MaxHTTPConnections, s.logger)
	cfg = s.cfg
	if cfg.HTTPAddr != "" {
		if err := s.startHTTP(); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Server, error) {
		if s.stopBG != nil {
			s.stopBG()
			s.bg.Wait()
		}
		s.closeStorage()
		if s.http != nil {
			s.http.Close()
			s.served.Wait()
		}
		return nil, err
	}
	// The trimmer exists before the logs open: their roll hook kicks it.
	s.trimmer = retention.NewTrimmer(retention.Options{
		Targets:  s.retentionTargets,
		Interval: cfg.RetentionInterval,
		Logger:   s.logger,
	})
	s.m.reg.MustRegister(s.trimmer)
	db, err := pebble.Open(filepath.Join(cfg.DataDir, "meta"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return fail(openMetaError(cfg.DataDir, err))
	}
	s.db = db
	topics, err := partition.Open(partition.Options{
		DataDir:    cfg.DataDir,
		DB:         db,
		Logger:     s.logger,
		LogOptions: s.logOptions,
	})
	if err != nil {
		return fail(err)
	}
	s.topics = topics
	s.offsets = offsets.New(db, offsets.Options{})
	if cfg.Cluster != nil {
		cl, err := s.startCluster(*cfg.Cluster)
		if err != nil {
			return fail(err)
		}
		s.cl = cl
		// Committed offsets are the metadata group's.
		s.offsets = cl.meta.FSM.Offsets()
	}
	s.lag = offsets.NewLagCollector(s.groupPositions)
	s.m.reg.MustRegister(s.lag)
	bgCtx, stopBG := context.WithCancel(context.Background())
	s.stopBG = stopBG
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.trimmer.Run(bgCtx) }()

	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fail(listenError("--addr", cfg.Addr, err))
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_connections_rejected_total",
		Help: "Client connections closed on arrival because --max-connections were open."})
	lis := newCapListener(tcp, cfg.MaxConnections, rejected, func(open int64) {
		s.logger.Warn("refusing connections: the connection limit is reached (raise --max-connections, or find the client that opens so many)",
			"open", open, "max", cfg.MaxConnections)
	})
	s.m.reg.MustRegister(rejected, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "logd_connections",
		Help: "Client connections open on the API."}, func() float64 { return float64(lis.Open()) }))
	s.lis = lis
	s.grpc = grpc.NewServer(append(requestCodecOptions(),
		grpc.MaxRecvMsgSize(cfg.MaxBatchBytes+64<<10),
		grpc.MaxConcurrentStreams(1024),
		grpc.ConnectionTimeout(handshakeTimeout),
		// Batches and fetch responses are up to several MiB; larger
		// windows keep a stream from waiting on HTTP/2 flow control.
		grpc.InitialWindowSize(8<<20),
		grpc.InitialConnWindowSize(32<<20),
		// Idle connections hold a descriptor each: close them after a
		// while, as Kafka's connections.max.idle.ms does; clients reconnect
		// transparently.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle}),
		experimental.BufferPool(messagePool),
	)...)
	pb.RegisterLogServer(s.grpc, s)
	pb.RegisterAdminServer(s.grpc, s)
	pb.RegisterOffsetsServer(s.grpc, s)
	pb.RegisterClusterServer(s.grpc, s)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.served.Add(1)
	go func() { defer s.served.Done(); s.grpc.Serve(lis) }()
	if s.cl != nil {
		s.cl.run()
	}
	s.ready.Store(true)
	s.logger.Info("logd serving", "addr", lis.Addr().String(), "http", s.HTTPAddr(), "data_dir", cfg.DataDir, "fsync", cfg.Fsync.String())
	return s, nil
}

// startHTTP serves /metrics, /healthz, /readyz and pprof on --http-addr,
// under its own connection cap.
func (s *Server) startHTTP() error {
	tcp, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr %s: %w (is another logd running?)", s.cfg.HTTPAddr, err)
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_http_connections_rejected_total",
		Help: "HTTP connections closed on arrival because --max-http-connections were open."})
	s.m.reg.MustRegister(rejected)
	lis := newCapListener(tcp, s.cfg.MaxHTTPConnections, rejected, func(open int64) {
		s.logger.Warn("refusing HTTP connections: the limit is reached (raise --max-http-connections, or find the client that opens so many)",
			"open", open, "max", s.cfg.MaxHTTPConnections)
	})
	s.httpLis = lis
	// Keep-alive connections idle for httpIdleTimeout are closed: a
	// scraper reconnects at its next scrape.
	s.http = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: httpIdleTimeout}
	s.served.Add(1)
	go func() { defer s.served.Done(); s.http.Serve(lis) }()
	return nil
}

// logFS is the file system the logs use, before the disk guard.
func (s *Server) logFS() log.FS {
	if s.cfg.LogFS != nil {
		return s.cfg.LogFS
	}
	return log.OSFS{}
}

// logOptions are the options of a partition's log.
func (s *Server) logOptions(c partition.TopicConfig) log.Options {
	return log.Options{
		FS:           guardedFS{FS: s.logFS(), g: s.disk, serving: &s.ready},
		SegmentBytes: c.SegmentBytes,
		SegmentAge:   time.Duration(c.SegmentMs) * time.Millisecond,
		Fsync:        s.cfg.Fsync,
		// In a cluster, readers see what Raft committed only.
		ManualHighWatermark: s.cfg.Cluster != nil,
		Hooks: log.Hooks{
			Fsync:   func(d time.Duration) { s.m.fsyncLatency.Observe(d.Seconds()) },
			Written: func(n int) { s.m.diskWrittenBytes.Add(float64(n)) },
			Rolled:  func(log.SegmentInfo) { s.trimmer.Kick() },
		},
	}
}

func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready: recovering or shutting down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// retentionTargets lists every partition with its topic's current policy:
// read at each trim, so `topic alter` takes effect at the next one.
func (s *Server) retentionTargets() ([]retention.Target, error) {
	var ts []retention.Target
	s.topics.Each(func(c partition.TopicConfig, p *partition.Partition) {
		var l retention.Log = p.Log
		if s.cl != nil {
			r := s.cl.node.Partition(meta.GroupOf(c, p.ID))
			if r == nil {
				return // no replica here
			}
			l = raftTrimmed{p.Log, r}
		}
		ts = append(ts, retention.Target{Topic: c.Name, Partition: p.ID, Log: l,
			Policy: retention.PolicyFromLimits(c.RetentionMs, c.RetentionBytes, c.RetentionRecords)})
	})
	return ts, nil
}

// raftTrimmed is a replicated partition's log as retention sees it:
// segments are deleted below the replica's TrimLimit only, never an entry
// Raft still needs to replay after a restart.
type raftTrimmed struct {
	*log.Log
	r *replication.Partition
}

func (l raftTrimmed) DeleteSegmentsBefore(offset int64) ([]log.SegmentInfo, error) {
	limit, err := l.r.TrimLimit()
	if err != nil {
		return nil, err
	}
	return l.Log.DeleteSegmentsBefore(min(offset, limit))
}

// Addr is the gRPC address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// HTTPAddr is the HTTP address, or "" without one.
func (s *Server) HTTPAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

// enter admits a request unless the server is shutting down; every admitted
// request calls leave when done, and Close waits for them before closing the
// logs.
func (s *Server) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errShuttingDown
	}
	s.inflight.Add(1)
	return nil
}

func (s *Server) leave() { s.inflight.Done() }

// Close stops the server gracefully: stop accepting, finish in-flight
// appends, fsync and close the logs. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.closed
		return s.closeErr
	}
	s.closing = true
	s.mu.Unlock()
	s.ready.Store(false)
	s.health.Shutdown()
	close(s.shutdown) // wakes long polls and subscriptions

	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		s.grpc.Stop()
		<-done
	}
	s.inflight.Wait()
	s.stopBG()
	s.bg.Wait()
	s.closeErr = s.closeStorage()
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.http.Shutdown(ctx)
		cancel()
	}
	s.served.Wait()
	s.logger.Info("logd stopped", "addr", s.lis.Addr().String())
	close(s.closed)
	return s.closeErr
}

func (s *Server) closeStorage() error {
	var errs []error
	if s.cl != nil {
		errs = append(errs, s.cl.close())
	}
	if s.topics != nil {
		errs = append(errs, s.topics.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}

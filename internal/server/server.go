package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/httpapi"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Defaults.
const (
	DefaultAddr              = "127.0.0.1:7070"
	DefaultHTTPAddr          = "127.0.0.1:7071"
	DefaultDataDir           = broker.DefaultDataDir
	DefaultRetentionInterval = broker.DefaultRetentionInterval
	DefaultMaxBatchBytes     = broker.DefaultMaxBatchBytes
	maxSubscribeBytes        = 4 << 20 // one Subscribe message
	shutdownGrace            = 10 * time.Second
	// maxConnectionIdle closes connections idle this long.
	maxConnectionIdle = 5 * time.Minute
)

// Server is a running node: the broker and its gRPC front-end.
type Server struct {
	pb.UnimplementedLogServer
	pb.UnimplementedAdminServer
	pb.UnimplementedOffsetsServer
	pb.UnimplementedClusterServer

	cfg    Config
	logger *slog.Logger
	b      *broker.Broker
	tls    *tlsconfig.Server // the API's TLS; nil: plaintext
	// raftTLS is the Raft port's mutual TLS and raftLn its listener; nil:
	// plaintext (rafttls.go).
	raftTLS *tlsconfig.Raft
	raftLn  *raftTLSListener
	reg     *prometheus.Registry
	m       *metrics

	grpc     *grpc.Server
	lis      net.Listener
	health   *health.Server
	http     *http.Server
	httpLis  net.Listener
	served   sync.WaitGroup
	ready    atomic.Bool
	mu       sync.Mutex // guards closing
	closing  bool
	closeErr error
	closed   chan struct{}

	subBudget   *broker.MemBudget // the subscriptions' (subscribe.go)
	subscribers atomic.Int64
	// httpAPI is the JSON API, live tail and console (package httpapi),
	// set once the broker is open; until then / answers 503.
	httpAPI atomic.Pointer[httpapi.Handler]
	// gate is the broker's authentication policy, for the HTTP port (set
	// once the broker is open).
	gate atomic.Pointer[auth.Gate]
}

// Start opens the data directory and starts serving.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := checkListenAddrs(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, closed: make(chan struct{}),
		reg: prometheus.NewRegistry(), subBudget: broker.NewMemBudget(subscribeBudgetBytes)}
	s.m = newMetrics(s.reg)
	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.setupRaftTLS(); err != nil {
		return nil, err
	}
	// The HTTP listener comes first so /healthz answers while a large log
	// is being recovered (/readyz says when it is done).
	s.cfg.MaxConnections, s.cfg.MaxHTTPConnections = connectionCaps(cfg.MaxConnections, cfg.MaxHTTPConnections, s.logger)
	if cfg.HTTPAddr != "" {
		if err := s.startHTTP(); err != nil {
			return nil, err
		}
	}
	bc := s.cfg.brokerConfig()
	bc.Registry = s.reg
	if bc.Cluster != nil {
		cc := *bc.Cluster
		cc.JoinLookup = JoinLookup(cfg.PeerTLS)
		bc.Cluster = &cc
	}
	b, err := broker.Open(bc)
	if err != nil {
		return nil, s.fail(err)
	}
	s.b = b
	if err := s.serveAPI(); err != nil {
		return nil, s.fail(err)
	}
	gate := b.Gate()
	s.gate.Store(&gate)
	s.httpAPI.Store(httpapi.New(b, httpapi.Config{Principal: httpPrincipal}))
	self := cfg.Advertise
	self.APIAddr = s.Addr()
	if cfg.BeforeReady != nil {
		fe, err := cfg.BeforeReady(b)
		if err != nil {
			s.Close()
			return nil, err
		}
		if fe.KafkaAddr != "" {
			self.KafkaAddr = fe.KafkaAddr
		}
		if fe.HTTPAddr != "" {
			self.HTTPAddr = fe.HTTPAddr
		}
	}
	if self.HTTPAddr == "" {
		self.HTTPAddr = s.HTTPAddr() // the JSON API's, named in 421 answers
	}
	b.Ready(self)
	s.ready.Store(true)
	s.logger.Info("logd serving", "addr", s.Addr(), "http", s.HTTPAddr(), "data_dir", cfg.DataDir, "fsync", cfg.Fsync.String(),
		"auth", cfg.Auth.Mode.String(), "authz", cfg.Auth.Authz.String())
	s.warnOpen(self.KafkaAddr)
	return s, nil
}

// fail undoes a Start that failed and returns err.
func (s *Server) fail(err error) error {
	if s.b != nil {
		s.b.Close()
	}
	if s.raftLn != nil {
		s.raftLn.Close() // the cluster's transport closes it once it started
	}
	if s.http != nil {
		s.http.Close()
		s.served.Wait()
	}
	return err
}

// serveAPI listens on the API address, under the connection cap, and
// serves the gRPC services there.
func (s *Server) serveAPI() error {
	tcp, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return listenError("--addr", s.cfg.Addr, err)
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_connections_rejected_total",
		Help: "Client connections closed on arrival because --max-connections were open."})
	lis := newCapListener(tcp, s.cfg.MaxConnections, rejected, func(open int64) {
		s.logger.Warn("refusing connections: the connection limit is reached (raise --max-connections, or find the client that opens so many)",
			"open", open, "max", s.cfg.MaxConnections)
	})
	s.reg.MustRegister(rejected, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "logd_connections",
		Help: "Client connections open on the API."}, func() float64 { return float64(lis.Open()) }))
	s.lis = lis
	opts := append(requestCodecOptions(), grpc.ChainUnaryInterceptor(s.logUnexpectedUnary, s.authUnary),
		grpc.ChainStreamInterceptor(s.logUnexpectedStream, s.authStream))
	if s.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.tls.TLSConfig("h2"))))
	}
	s.grpc = grpc.NewServer(append(opts,
		grpc.MaxRecvMsgSize(s.cfg.MaxBatchBytes+64<<10),
		// Calls without credentials under --auth required are refused
		// before their message is read (auth.go).
		grpc.InTapHandle(s.authTap),
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
	pb.RegisterGroupsServer(s.grpc, &groupsServer{s: s})
	pb.RegisterSecurityServer(s.grpc, &securityServer{s: s})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.served.Add(1)
	go func() { defer s.served.Done(); s.grpc.Serve(lis) }()
	return nil
}

// startHTTP serves /metrics, /healthz, /readyz and pprof on --http-addr,
// under its own connection cap (with a reserve for the probes), over TLS
// when the API serves it, behind httpapi's Guard (browsers of other
// origins may not write; a loopback port answers loopback Host names).
func (s *Server) startHTTP() error {
	tcp, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on --http-addr %s: %w (is another logd running?)", s.cfg.HTTPAddr, err)
	}
	guard, err := httpapi.NewGuard(httpapi.GuardConfig{AllowedOrigins: s.cfg.HTTPAllowedOrigins, ListenAddr: tcp.Addr().String()})
	if err != nil {
		tcp.Close()
		return err
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "logd_http_connections_rejected_total",
		Help: "HTTP connections refused because --max-http-connections were open: closed on arrival, or answered 503 in the probes' reserve."})
	s.reg.MustRegister(rejected)
	lis := newCapListener(tcp, s.cfg.MaxHTTPConnections, rejected, func(open int64) {
		s.logger.Warn("the HTTP connection limit is reached: new connections serve only /healthz, /readyz and /metrics, or are closed (raise --max-http-connections, or find the client that opens so many, such as live tails)",
			"open", open, "max", s.cfg.MaxHTTPConnections)
	})
	lis.reserve = httpProbeReserve
	s.httpLis = lis
	var served net.Listener = lis
	if s.tls != nil {
		// The same certificate (and client CA) as the API.
		served = tls.NewListener(lis, s.tls.TLSConfig("h2", "http/1.1"))
	}
	// Keep-alive connections idle for httpIdleTimeout are closed: a
	// scraper reconnects at its next scrape.
	s.http = &http.Server{Handler: guard.Wrap(s.probeReserve(s.httpAuth(s.httpHandler()), rejected)),
		ConnContext: markReserved, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: httpIdleTimeout}
	s.served.Add(1)
	go func() { defer s.served.Done(); s.http.Serve(served) }()
	return nil
}

func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready: recovering or shutting down", http.StatusServiceUnavailable)
			return
		}
		if cl := s.b.Cluster(); cl != nil && cl.Refused() != nil {
			http.Error(w, "not ready: "+cl.Refused().Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h := s.httpAPI.Load(); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, `{"error": "not ready: the node is recovering its data; retry shortly"}`)
	})
	if s.cfg.PProf {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Broker is the node's core, for other front-ends in the same process.
func (s *Server) Broker() *broker.Broker { return s.b }

// Addr is the gRPC address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// HTTPAddr is the HTTP address, or "" without one.
func (s *Server) HTTPAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

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
	s.b.Shutdown() // refuses new requests, wakes long polls and subscriptions
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		s.grpc.Stop()
		<-done
	}
	s.closeErr = s.b.Close()
	if s.raftLn != nil {
		s.raftLn.Close() // the cluster's transport closes it once it started
	}
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

// ClusterMembers lists the ids of the nodes the cluster metadata holds, as
// this node sees them (nil on a node that runs alone).
func (s *Server) ClusterMembers() []string { return s.b.Members() }

// LocalHighWatermark is this node's high watermark of a partition (its
// replica's view: what it knows is committed), -1 without the partition.
func (s *Server) LocalHighWatermark(topic string, id int32) int64 {
	return s.b.LocalHighWatermark(topic, id)
}

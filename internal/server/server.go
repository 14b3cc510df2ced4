package server

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

const (
	maxSubscribeBytes = 4 << 20 // one Subscribe message
	shutdownGrace     = 10 * time.Second
	// maxConnectionIdle closes connections idle this long.
	maxConnectionIdle = 5 * time.Minute
	// handshakeTimeout closes an API connection that has not completed
	// the HTTP/2 handshake (sent its preface and settings) by then, so
	// that silent sockets do not hold connection slots for long.
	handshakeTimeout = 10 * time.Second
)

// Server is the gRPC front-end: the services of proto/logd/v1 over one
// broker. New makes it, Serve serves the broker on a listener, Close
// stops it.
type Server struct {
	pb.UnimplementedLogServer
	pb.UnimplementedAdminServer
	pb.UnimplementedOffsetsServer
	pb.UnimplementedClusterServer

	cfg    Config
	logger *slog.Logger
	b      *broker.Broker
	m      *metrics

	grpc   *grpc.Server
	lis    net.Listener
	health *health.Server
	served sync.WaitGroup

	subs *broker.Subscriptions // subscribe.go
}

// New makes the gRPC front-end; it serves nothing until Serve.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, logger: cfg.Logger,
		subs: broker.NewSubscriptions(subscribeBudgetBytes, subscribeCost{})}
	s.m = newMetrics(cfg.Registry)
	return s
}

// Serve serves b's gRPC services on lis until Close.
func (s *Server) Serve(b *broker.Broker, lis net.Listener) {
	s.b, s.lis = b, lis
	opts := append(requestCodecOptions(), grpc.ChainUnaryInterceptor(s.statusUnary, s.authUnary),
		grpc.ChainStreamInterceptor(s.statusStream, s.authStream))
	if s.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.cfg.TLS)))
	}
	s.grpc = grpc.NewServer(append(opts,
		grpc.MaxRecvMsgSize(b.MaxBatchBytes()+64<<10),
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
	pb.RegisterKVServer(s.grpc, &kvServer{s: s})
	pb.RegisterShareServer(s.grpc, &shareServer{s: s})
	pb.RegisterTransactionsServer(s.grpc, &txnServer{s: s})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.served.Add(1)
	go func() { defer s.served.Done(); s.grpc.Serve(lis) }()
}

// Addr is the address the API listens on ("" before Serve).
func (s *Server) Addr() string {
	if s.lis == nil {
		return ""
	}
	return s.lis.Addr().String()
}

// each converts every element of in with f (nil for none).
func each[T, U any](in []T, f func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// Close stops serving: the health service says NOT_SERVING, calls in
// flight finish (for at most shutdownGrace; the broker's Shutdown, called
// before, wakes long polls and subscriptions), then the listener closes.
// It does nothing before Serve.
func (s *Server) Close() error {
	if s.grpc == nil {
		return nil
	}
	s.health.Shutdown()
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		s.grpc.Stop()
		<-done
	}
	s.served.Wait()
	return nil
}

package server

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/log"
)

// Config configures a node. Zero values take the documented defaults.
type Config struct {
	DataDir           string // default ./data
	Addr              string // gRPC address; default 127.0.0.1:7070 ("127.0.0.1:0" picks a port)
	HTTPAddr          string // /metrics, /healthz, /readyz, pprof; empty: no HTTP listener
	Fsync             log.FsyncPolicy
	RetentionInterval time.Duration // default 30s
	MaxBatchBytes     int           // largest accepted batch or record; default 1 MiB
	// MinFreeBytes: appends are refused while the data directory's file
	// system has less free space (metadata writes at half of it); 0: 5% of
	// the file system, between 1 MiB and 1 GiB.
	MinFreeBytes int64
	// MaxConnections caps the API's open client connections; past it new
	// connections are closed at once. 0: DefaultMaxConnections.
	MaxConnections int
	// MaxHTTPConnections caps the HTTP port's open connections, apart
	// from MaxConnections. 0: DefaultMaxHTTPConnections.
	MaxHTTPConnections int
	// HTTPAllowedOrigins are the web origins (scheme://host[:port]) whose
	// pages may send state-changing requests to the HTTP port
	// (--http-allowed-origins; docs/http.md, "Browsers"). A page of any
	// other origin is refused; clients that send no Origin are not.
	HTTPAllowedOrigins []string
	// SendTimeout ends a Subscribe stream whose client has read nothing
	// for this long while a message waited for it. 0: DefaultSendTimeout.
	SendTimeout time.Duration
	// LogFS, when set, is the file system the partitions' logs use (tests
	// inject I/O faults through it); nil: the operating system's.
	LogFS log.FS
	// Advertise holds the addresses this node's other front-ends serve
	// (KafkaAddr, HTTPAddr; "" for none): the broker advertises them with
	// the API address, and a cluster records them in its metadata.
	Advertise broker.Node
	// TLS, when its CertFile is set, serves the API over TLS (1.2 minimum),
	// mutual when ClientCAFile is set: a client without a certificate from
	// that CA is refused at the handshake. The files are re-read when they
	// change and on Server.ReloadTLS (SIGHUP).
	TLS tlsconfig.ServerFiles
	// PeerTLS is the TLS of this node's one call of another node's API:
	// asking the --join node for its Raft address; nil: plaintext. A
	// cluster whose nodes serve TLS needs it.
	PeerTLS *tls.Config
	// RaftTLS, when its files are set (all three), puts mutual TLS on the
	// Raft port (--raft-tls-cert, --raft-tls-key, --raft-tls-ca): a peer
	// without a certificate from the cluster CA can neither connect to this
	// node nor be connected to, and cannot join. Needs Cluster. Re-read on
	// change and on Server.ReloadTLS.
	RaftTLS tlsconfig.RaftFiles
	// Auth is --auth, --authz and --super-users (docs/security.md): who
	// must authenticate, and whether ACLs are enforced. The zero value
	// admits everyone as anonymous and authorizes everything.
	Auth broker.AuthConfig
	// PProf serves /debug/pprof/ on the HTTP port (off by default: profiles
	// reveal memory contents and cost CPU).
	PProf bool
	// Cluster, when set, runs the node as a member of a cluster.
	Cluster *ClusterConfig
	Logger  *slog.Logger
	// BeforeReady, when set, runs once the broker is open and the API
	// listens, before the node advertises its addresses: it starts other
	// front-ends over the broker (the Kafka listener) and returns the
	// addresses they advertise (KafkaAddr, HTTPAddr). An error stops Start.
	BeforeReady func(*broker.Broker) (broker.Node, error)
}

// ClusterConfig turns a node into a member of a cluster (package cluster).
type ClusterConfig = cluster.Config

// withDefaults fills in the defaults.
func (cfg Config) withDefaults() Config {
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
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// brokerConfig is the broker's part of the config.
func (cfg Config) brokerConfig() broker.Config {
	return broker.Config{DataDir: cfg.DataDir, Fsync: cfg.Fsync, RetentionInterval: cfg.RetentionInterval,
		MaxBatchBytes: cfg.MaxBatchBytes, MinFreeBytes: cfg.MinFreeBytes, LogFS: cfg.LogFS,
		Cluster: cfg.Cluster, Logger: cfg.Logger, Auth: cfg.Auth}
}

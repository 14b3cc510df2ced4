package node

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/server"
)

// Defaults of the front-ends' addresses.
const (
	DefaultAddr      = "127.0.0.1:7070"
	DefaultHTTPAddr  = "127.0.0.1:7071"
	DefaultKafkaAddr = "127.0.0.1:9092" // Kafka's port, on loopback
	// DefaultSendTimeout is Config.SendTimeout's default.
	DefaultSendTimeout = server.DefaultSendTimeout
)

// Config configures a node: the broker's config, and what the node serves
// it on. Zero values take the documented defaults. The broker's Registry
// and its cluster's JoinLookup are the node's to set; values given there
// are ignored.
type Config struct {
	broker.Config

	Addr     string // gRPC address; default 127.0.0.1:7070 ("127.0.0.1:0" picks a port)
	HTTPAddr string // JSON API, /metrics, /healthz, /readyz, pprof; empty: no HTTP listener
	// KafkaAddr is the Kafka listener's address (docs/kafka.md); empty:
	// no Kafka listener. KafkaAdvertisedAddr is the HOST:PORT Kafka
	// clients are told to connect to (default: the listener's).
	KafkaAddr, KafkaAdvertisedAddr string
	// KafkaOptional lets the node run without its Kafka listener when
	// KafkaAddr is in use (it warns): for a default address, not one the
	// operator asked for.
	KafkaOptional bool
	// MaxConnections caps the open client connections of the API, and
	// of the Kafka listener apart; past it new connections are closed at
	// once. 0: DefaultMaxConnections.
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
	// TLS, when its CertFile is set, serves the API, the HTTP port and
	// the Kafka listener over TLS (1.2 minimum), mutual when ClientCAFile
	// is set: a client without a certificate from that CA is refused at
	// the handshake. The files are re-read when they change and on
	// Node.ReloadTLS (SIGHUP).
	TLS tlsconfig.ServerFiles
	// PeerTLS is the TLS of this node's one call of another node's API:
	// asking the --join node for its Raft address; nil: plaintext. A
	// cluster whose nodes serve TLS needs it.
	PeerTLS *tls.Config
	// RaftTLS, when its files are set (all three), puts mutual TLS on the
	// Raft port (--raft-tls-cert, --raft-tls-key, --raft-tls-ca): a peer
	// without a certificate from the cluster CA can neither connect to this
	// node nor be connected to, and cannot join. Needs Cluster. Re-read on
	// change and on Node.ReloadTLS.
	RaftTLS tlsconfig.RaftFiles
	// PProf serves /debug/pprof/ on the HTTP port (off by default: profiles
	// reveal memory contents and cost CPU).
	PProf bool
}

// ClusterConfig turns a node into a member of a cluster (package cluster).
type ClusterConfig = cluster.Config

// withDefaults fills in the node's defaults (the broker fills in its own
// when it opens; DataDir and Logger are needed before).
func (cfg Config) withDefaults() Config {
	if cfg.DataDir == "" {
		cfg.DataDir = broker.DefaultDataDir
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = broker.DefaultMaxBatchBytes
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

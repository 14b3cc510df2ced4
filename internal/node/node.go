package node

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/broker"
)

// frontEnd is one way clients reach the broker: the gRPC API, the Kafka
// listener, the HTTP port. A front-end may listen before the broker opens
// (the HTTP port answers /healthz during recovery); Start gives it the
// open broker to serve, Close stops it (after the broker's Shutdown has
// woken its waiters). Its TLS, when it serves TLS, is the node's: one
// Node.ReloadTLS reaches every front-end.
type frontEnd interface {
	Start(b *broker.Broker) error
	Close() error
}

// Node is a running logd node: the broker and the front-ends that serve it.
type Node struct {
	cfg    Config
	logger *slog.Logger
	reg    *prometheus.Registry
	b      *broker.Broker
	// tls is the certificates of the API, the HTTP port and the Kafka
	// listener (nil: plaintext); raftTLS the Raft port's mutual TLS and
	// raftLn its listener (nil: plaintext; rafttls.go).
	tls     *tlsconfig.Server
	raftTLS *tlsconfig.Raft
	raftLn  *raftTLSListener

	api   *apiFrontEnd
	kafka *kafkaFrontEnd // nil without KafkaAddr
	http  *httpFrontEnd  // nil without HTTPAddr
	front []frontEnd     // started in this order once the broker is open
	ready atomic.Bool

	mu       sync.Mutex // guards closing
	closing  bool
	closeErr error
	closed   chan struct{}
}

// Start checks the config, opens the data directory and starts serving:
// the HTTP port first (so /healthz answers while a large log is being
// recovered; /readyz says when it is done), then the broker, then the
// gRPC API and the Kafka listener on it. The node is ready (the broker
// advertises its addresses) once every front-end listens.
func Start(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := checkListenAddrs(cfg); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, logger: cfg.Logger, reg: prometheus.NewRegistry(), closed: make(chan struct{})}
	if err := n.loadTLS(); err != nil {
		return nil, err
	}
	if err := n.setupRaftTLS(); err != nil {
		return nil, err
	}
	n.cfg.MaxConnections, n.cfg.MaxHTTPConnections = connectionCaps(cfg.MaxConnections, cfg.MaxHTTPConnections, n.logger)
	n.api = newAPIFrontEnd(n)
	n.front = []frontEnd{n.api}
	if cfg.KafkaAddr != "" {
		// The Kafka listener's cap is --max-connections as given: the
		// descriptor budget of connectionCaps covers the API and the
		// HTTP port.
		n.kafka = newKafkaFrontEnd(n, cfg.MaxConnections)
		n.front = append(n.front, n.kafka)
	}
	if cfg.HTTPAddr != "" {
		h, err := listenHTTP(n)
		if err != nil {
			return nil, n.fail(err)
		}
		n.http = h
		n.front = append(n.front, h)
	}
	bc := n.cfg.Config
	bc.Registry = n.reg
	if bc.Cluster != nil {
		cc := *bc.Cluster
		cc.JoinLookup = joinLookup(n.cfg.PeerTLS)
		bc.Cluster = &cc
	}
	b, err := broker.Open(bc)
	if err != nil {
		return nil, n.fail(err)
	}
	n.b = b
	for _, fe := range n.front {
		if err := fe.Start(b); err != nil {
			return nil, n.fail(err)
		}
	}
	self := broker.Node{APIAddr: n.Addr(), KafkaAddr: n.KafkaAddr(), HTTPAddr: n.HTTPAddr()}
	b.Ready(self)
	n.ready.Store(true)
	n.logger.Info("logd serving", "addr", n.Addr(), "http", n.HTTPAddr(), "data_dir", cfg.DataDir, "fsync", cfg.Fsync.String(),
		"auth", cfg.Auth.Mode.String(), "authz", cfg.Auth.Authz.String())
	n.warnOpen(self.KafkaAddr)
	return n, nil
}

// fail undoes a Start that failed and returns err.
func (n *Node) fail(err error) error {
	if n.b != nil {
		n.b.Shutdown()
	}
	n.closeFrontEnds()
	if n.b != nil {
		n.b.Close()
	}
	n.closeRest()
	return err
}

// closeFrontEnds closes the front-ends that serve clients, the Kafka
// listener first (the HTTP port stays, for probes, until closeRest).
func (n *Node) closeFrontEnds() {
	if n.kafka != nil {
		n.kafka.Close()
	}
	n.api.Close()
}

// closeRest closes what outlives the broker: the Raft listener and, last,
// the HTTP port.
func (n *Node) closeRest() {
	if n.raftLn != nil {
		n.raftLn.Close() // the cluster's transport closes it once it started
	}
	if n.http != nil {
		n.http.Close()
	}
}

// Close stops the node gracefully: it stops being ready, the broker
// refuses new requests and wakes long polls and subscriptions, the
// front-ends finish the calls in flight and close, the broker fsyncs and
// closes its logs, and the HTTP port closes last. It is safe to call more
// than once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closing {
		n.mu.Unlock()
		<-n.closed
		return n.closeErr
	}
	n.closing = true
	n.mu.Unlock()
	n.ready.Store(false)
	n.b.Shutdown()
	n.closeFrontEnds()
	n.closeErr = n.b.Close()
	n.closeRest()
	n.logger.Info("logd stopped", "addr", n.Addr())
	close(n.closed)
	return n.closeErr
}

// TLSEnabled reports whether the front-ends or the Raft port serve TLS.
func (n *Node) TLSEnabled() bool { return n.tls != nil || n.raftTLS != nil }

// ReloadTLS re-reads the TLS files now (on SIGHUP), for every listener:
// the API's, the HTTP port's and the Kafka listener's certificates (one
// set, shared), and the Raft port's. Files that fail to load keep the
// previous ones serving; the error names them. Without TLS it does nothing.
func (n *Node) ReloadTLS() error {
	var errs []error
	if n.tls != nil {
		errs = append(errs, n.tls.Reload())
	}
	if n.raftTLS != nil {
		errs = append(errs, n.raftTLS.Reload())
	}
	return errors.Join(errs...)
}

// Broker is the node's core.
func (n *Node) Broker() *broker.Broker { return n.b }

// Addr is the gRPC address the node listens on.
func (n *Node) Addr() string { return n.api.Addr() }

// HTTPAddr is the HTTP address, or "" without one.
func (n *Node) HTTPAddr() string {
	if n.http == nil {
		return ""
	}
	return n.http.Addr()
}

// KafkaAddr is the address the Kafka listener advertises, or "" when it
// does not run.
func (n *Node) KafkaAddr() string {
	if n.kafka == nil {
		return ""
	}
	return n.kafka.Addr()
}

// ClusterMembers lists the ids of the nodes the cluster metadata holds, as
// this node sees them (nil on a node that runs alone).
func (n *Node) ClusterMembers() []string { return n.b.Members() }

// LocalHighWatermark is this node's high watermark of a partition (its
// replica's view: what it knows is committed), -1 without the partition.
func (n *Node) LocalHighWatermark(topic string, id int32) int64 {
	return n.b.LocalHighWatermark(topic, id)
}
